#include "slurm/recover_agent.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/one_line.h"
#include "slurm/atomic_file.h"
#include "slurm/attempt_report.h"
#include "slurm/escalation.h"
#include "slurm/job_comment.h"
#include "slurm/peak_history.h"
#include "slurm/shard_plan.h"

namespace colo::slurm {

namespace {

// follow: the site's configured state_dir may be a symbolic link to a directory (an NFS layout);
// the reports/ drop box inside it must be a directory itself.
void ensure_dir(const std::string& path, mode_t mode, bool follow) {
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST)
    throw UserError(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
  struct stat st {};
  if ((follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0 || !S_ISDIR(st.st_mode))
    throw UserError(fmt::format("{}: not a directory", path));
  ::chmod(path.c_str(), mode);
}

// Tests stop the agent between writing a plan and applying it, to kill it there (-9): the
// variable names a file the agent creates once paused; it then waits to be killed.
void pause_for_tests() {
  const char* f = std::getenv("COLO_SLURM_AGENT_PAUSE_AFTER_PLAN");
  if (!f || !*f) return;
  write_file_atomically(f, "paused\n", 0644);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(60));
}

}  // namespace

std::string RecoverAgent::state_path(const std::string& state_dir) { return state_dir + "/agent.json"; }

RecoverAgent::RecoverAgent(SiteSettings site, SlurmControl& slurm, std::ostream& log, std::int64_t report_min_age_s)
    : site_(std::move(site)), slurm_(slurm), log_(log), report_min_age_s_(report_min_age_s) {
  std::filesystem::create_directories(site_.state_dir);
  ensure_dir(site_.state_dir, 0755, true);
  const std::string lock_path = site_.state_dir + "/agent.lock";
  lock_ = std::make_unique<ExclusiveLock>(
      lock_path, fmt::format("another colo slurm recover is running on {} ({} is locked)", site_.state_dir, lock_path));
  ensure_dir(reports_dir(site_.state_dir), 01733, false);  // a drop box: anyone adds, nobody lists
  std::string text;
  if (!read_small_file(state_path(site_.state_dir), text)) return;
  try {
    const auto j = nlohmann::json::parse(text);
    for (const auto& [id, v] : j.at("jobs").items()) {
      AgentJob a;
      a.restart = v.at("restart").get<int>();
      a.phase = v.at("phase").get<std::string>();
      a.tres = v.value("tres", std::string());
      a.ooms = v.value("ooms", 0);
      a.note = v.value("note", std::string());
      a.comment_pending = v.value("comment_pending", false);
      jobs_[std::stoull(id)] = a;
    }
  } catch (const std::exception& e) {
    throw UserError(fmt::format("{}: corrupt agent state: {}", state_path(site_.state_dir), one_line(e.what())));
  }
}

void RecoverAgent::save() const {
  nlohmann::ordered_json j;
  j["jobs"] = nlohmann::ordered_json::object();
  for (const auto& [id, a] : jobs_)
    j["jobs"][std::to_string(id)] = {{"restart", a.restart}, {"phase", a.phase}, {"tres", a.tres},
                                     {"ooms", a.ooms}, {"note", a.note}, {"comment_pending", a.comment_pending}};
  write_file_atomically(state_path(site_.state_dir), j.dump(1) + "\n", 0600);
}

int RecoverAgent::step() {
  const std::vector<SlurmJob> all = slurm_.jobs();
  std::set<std::uint64_t> seen;
  int failed = 0;
  for (const SlurmJob& j : all) {
    seen.insert(j.job_id);
    try {
      if (j.state == "SPECIAL_EXIT" && j.exit_code == site_.hold_exit_code) handle_held(j);
      else if (j.state == "COMPLETED") handle_finished(j);
    } catch (const std::exception& e) {
      // One job's trouble (Slurm refusing an update, a full disk) must not hold up the others.
      log_ << fmt::format("job {}: {} (retrying next pass)\n", j.job_id, one_line(e.what())) << std::flush;
      ++failed;
    }
  }
  // Slurm forgets finished jobs after MinJobAge; so does the agent. A plan in flight is kept
  // until its job has been missing from kPlanGoneAfter passes in a row over at least
  // report_min_age_s (a held job is always listed, so it was cancelled or purged and the plan can
  // never be applied; a short or filtered listing during a controller failover is not enough).
  bool pruned = false;
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    const bool gone = !seen.count(it->first);
    bool stale_plan = false;
    if (gone && it->second.phase == "planned") {
      auto& [passes, since] = unseen_.try_emplace(it->first, 0, now).first->second;
      stale_plan = ++passes >= kPlanGoneAfter && now - since >= report_min_age_s_;
    }
    if (!gone) unseen_.erase(it->first);
    if (gone && (it->second.phase != "planned" || stale_plan)) {
      if (stale_plan) log_ << fmt::format("job {}: gone from Slurm; its unapplied plan is dropped\n", it->first) << std::flush;
      unseen_.erase(it->first);
      it = jobs_.erase(it);
      pruned = true;
    } else {
      ++it;
    }
  }
  if (pruned) save();
  // The drop box holds only reports of jobs Slurm still knows (and, for a while, just-finished
  // ones): stale files and names squatted for future job ids go.
  if (const int n = remove_stale_reports(site_.state_dir, seen, report_min_age_s_); n > 0)
    log_ << fmt::format("removed {} stale attempt report(s)\n", n) << std::flush;
  return failed;
}

void RecoverAgent::handle_held(const SlurmJob& j) {
  auto found = jobs_.find(j.job_id);
  if (found != jobs_.end() && found->second.restart == j.restart_cnt) {
    AgentJob& a = found->second;
    if (a.phase == "planned") apply(j, a);  // killed mid-way last time: the same plan again
    if (a.comment_pending) set_comment(j, a);  // the AdminComment failed (or was cut off) last time
    if (a.phase != "left_held") return;         // released (Slurm not caught up) or gave up
    // Left held for want of an OOM report: looked at again each pass, since another step's report
    // can appear late (an NFS client's cached listing of reports/); an OOM there is escalated now.
    const auto late = read_attempt_report(site_.state_dir, j.job_id, j.restart_cnt - 1, j.user_id);
    if (!(late && late->outcome == "oom")) return;
  }
  const auto comment = parse_comment(j.comment);
  std::string why;
  const auto report = read_attempt_report(site_.state_dir, j.job_id, j.restart_cnt - 1, j.user_id, &why);
  if (!comment && !(report && report->outcome == "oom")) return;  // not a job colo runs
  AgentJob a = found != jobs_.end() ? found->second : AgentJob{};
  if (!report || report->outcome != "oom") {
    // Held with the hold exit code but no OOM in colo run's report (the script exited with that
    // code itself, or colo run could not start): a larger share is not what it needs.
    a.restart = j.restart_cnt;
    a.phase = "left_held";
    a.note = fmt::format("held with exit code {} but colo run reported no out-of-memory ({}): left held, "
                         "not escalated (scontrol release {} to run it again)",
                         j.exit_code, report ? "outcome " + report->outcome : why, j.job_id);
    a.comment_pending = true;
    jobs_[j.job_id] = a;
    save();
    log_ << fmt::format("job {}: {}\n", j.job_id, one_line(a.note)) << std::flush;
    set_comment(j, jobs_[j.job_id]);
    return;
  }
  a.restart = j.restart_cnt;
  a.ooms += 1;
  const auto current = parse_tres_per_node(j.tres_per_node);
  const std::optional<MiB> peak = report ? report->peak_mib : std::nullopt;
  std::optional<TresRequest> next;
  if (!current) {
    a.note = fmt::format("OOM, but the job asks for no GPU share ({}): left held", j.tres_per_node);
  } else if (a.ooms > site_.max_retries) {
    a.note = fmt::format("out of memory {} times (max_retries {}): left held", a.ooms, site_.max_retries);
  } else if (!(next = escalate(*current, peak, site_))) {
    a.note = "out of memory on a whole GPU: a larger share cannot help; left held";
  }
  if (!next) {
    a.phase = "gave_up";
    a.comment_pending = true;  // on disk first: a crash before scontrol still leaves the note to set
    jobs_[j.job_id] = a;
    save();
    log_ << fmt::format("job {}: {}\n", j.job_id, a.note) << std::flush;
    set_comment(j, jobs_[j.job_id]);
    return;
  }
  a.phase = "planned";
  a.tres = with_gpu_request(j.tres_per_node, *next);  // the job's other GRES stay
  a.note = fmt::format("OOM {} with {} (peak {}): retry with {}", a.ooms, j.tres_per_node,
                       peak ? fmt::format("{} MiB", *peak) : std::string("unknown"), a.tres);
  jobs_[j.job_id] = a;
  save();  // on disk before Slurm changes: a restart repeats exactly this plan
  log_ << fmt::format("job {}: {}\n", j.job_id, a.note) << std::flush;
  pause_for_tests();
  apply(j, jobs_[j.job_id]);
}

void RecoverAgent::set_comment(const SlurmJob& j, AgentJob& a) {
  try {
    slurm_.set_admin_comment(j.job_id, "colo: " + a.note);
    a.comment_pending = false;
    save();
  } catch (const UserError& e) {
    log_ << fmt::format("job {}: {} (the AdminComment is retried next pass)\n", j.job_id, one_line(e.what())) << std::flush;
  }
}

void RecoverAgent::apply(const SlurmJob& j, AgentJob& a) {
  slurm_.set_request(j.job_id, a.tres);
  slurm_.release(j.job_id);
  a.phase = "released";
  save();
  log_ << fmt::format("job {}: released with {}\n", j.job_id, a.tres) << std::flush;
}

void RecoverAgent::handle_finished(const SlurmJob& j) {
  auto found = jobs_.find(j.job_id);
  if (found != jobs_.end() && found->second.phase == "recorded") return;
  const auto comment = parse_comment(j.comment);
  if (!comment || comment->fingerprint.empty()) return;
  AgentJob a = found != jobs_.end() ? found->second : AgentJob{};
  a.restart = j.restart_cnt;
  a.phase = "recorded";
  std::string why;
  const auto report = read_attempt_report(site_.state_dir, j.job_id, j.restart_cnt, j.user_id, &why);
  // A fingerprint names its user: a job may only teach the history about its own user's runs.
  const std::string owner = fmt::format("u{}-", j.user_id);
  if (comment->fingerprint.rfind(owner, 0) != 0) {
    a.note = fmt::format("fingerprint {} is not user {}'s: not recorded", comment->fingerprint, j.user_id);
  } else if (!report || report->outcome != "ok" || !report->peak_mib) {
    a.note = report ? "no peak in the report: not recorded" : why;
  } else if (*report->peak_mib == 0) {
    // Nothing of the job was seen on its GPUs (a CPU-only run, or GPUs colo run could not read):
    // no evidence of what it needs, and never a reason to forget an earlier real peak.
    a.note = "peak 0 MiB (no GPU memory seen): not recorded";
  } else {
    PeakHistory h = PeakHistory::load(history_path(site_.state_dir));
    h.record(comment->fingerprint, PeakRecord{*report->peak_mib, j.job_id});
    h.save(history_path(site_.state_dir));
    a.note = fmt::format("peak {} MiB recorded for {}", *report->peak_mib, comment->fingerprint);
    log_ << fmt::format("job {}: {}\n", j.job_id, a.note) << std::flush;
  }
  jobs_[j.job_id] = a;
  save();
}

}  // namespace colo::slurm
