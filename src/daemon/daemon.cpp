#include "daemon/daemon.h"
#include "daemon/http_reply.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include <fmt/format.h>
#include <pwd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "core/one_line.h"
#include "daemon/client/job_request.h"
#include "daemon/client/policy_file.h"
#include "estimate/estimator.h"
#include "daemon/job_cgroup.h"
#include "daemon/log_relay.h"
#include "daemon/oom_detector.h"
#include "daemon/proc.h"

namespace colo::daemon {

namespace fs = std::filesystem;

namespace {

double mono() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

Policy policy_from(const DaemonConfig& c) { return resolve_policy(c.policy, c.policies, c.conditions); }

// Fault injection for the crash tests: COLO_FAULT_KILL_AT=<point>[:N] makes colod SIGKILL
// itself the N-th time (default the first) it reaches that point of a launch
// (attempt-committed, shim-spawned, pid-committed, go-sent), so every window of the launch
// protocol is hit deterministically, at any launch of a long run.
void fault_point(const char* point) {
  static const char* want = std::getenv("COLO_FAULT_KILL_AT");
  static int seen = 0;
  if (!want) return;
  const char* colon = std::strchr(want, ':');
  const size_t len = colon ? static_cast<size_t>(colon - want) : std::strlen(want);
  if (std::strlen(point) != len || std::strncmp(want, point, len) != 0) return;
  const long nth = colon ? std::strtol(colon + 1, nullptr, 10) : 1;
  if (++seen >= nth) ::raise(SIGKILL);
}

// An end colod records itself (no exit.json to read): launch failures, vanished shims.
ShimExit synthetic_exit(bool started, std::string error) {
  ShimExit e;
  e.started = started;
  e.error = std::move(error);
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  e.end_time = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  return e;
}

std::int64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::int64_t>(st.st_size) : 0;
}

}  // namespace

Daemon::Daemon(DaemonConfig cfg, std::unique_ptr<gpu::GpuBackend> backend,
               std::vector<std::pair<std::string, std::string>> job_env, std::string shim_exe)
    : cfg_(std::move(cfg)),
      store_((fs::create_directories(cfg_.state_dir), cfg_.db_path())),
      monitor_(std::move(backend), cfg_.managed, cfg_.window),
      scheduler_(SchedulerConfig{policy_from(cfg_), cfg_.recovery, cfg_.backfill}),
      history_(store_, cfg_.history_margin),
      job_env_(std::move(job_env)),
      shim_exe_(std::move(shim_exe)),
      checkpoint_requests_(cfg_.checkpoint_dir()) {
  secure_state_dir();
  for (const GpuSlot& s : monitor_.slots()) {
    auto r = store_.drained_reason(s.uuid);
    if (!r) continue;
    if (r->rfind("unhealthy: ", 0) == 0) {
      // Written by an older colod, which persisted health drains like operator drains: health
      // is re-measured now, so this one is lifted.
      Txn txn(store_.db());
      store_.set_drained(s.slot, s.uuid, false, "");
      store_.event(std::nullopt, now(), "gpu", fmt::format("GPU {} ({}): stale health drain lifted ({})", s.slot, s.uuid, *r));
      txn.commit();
      continue;
    }
    drained_[s.uuid] = *r;
  }

  log(fmt::format("colod: {} GPU slot(s) via {}", monitor_.slots().size(), monitor_.describe()));
  for (const std::string& l : monitor_.capability_lines()) log("colod: " + l);
  log("colod: policy " + scheduler_.config().policy.describe() +
      fmt::format(", recovery {}", to_string(cfg_.recovery.mode)));
  if (!monitor_.smact_available())
    log("colod: SMACT is unavailable on every managed GPU: policies fall back to memory-only conditions");

  if (cfg_.sharing == Sharing::Mps) {
    gpu::MpsOptions o;
    o.control_binary = cfg_.mps_control;
    o.root_dir = cfg_.mps_root.empty() ? cfg_.state_dir + "/mps" : cfg_.mps_root;
    for (const GpuSlot& s : monitor_.slots()) {
      if (s.mig_index >= 0 || mps_.count(s.nvml_index) || !s.identity_known()) continue;
      auto d = std::make_unique<gpu::MpsDaemon>(o, s.uuid);
      try {
        d->start();
        log(fmt::format("colod: MPS control daemon for GPU {} (pipes in {})", s.nvml_index, d->pipe_dir()));
      } catch (const std::exception& e) {
        log(fmt::format("colod: MPS for GPU {} failed: {}; jobs there run as plain CUDA clients", s.nvml_index, e.what()));
        continue;
      }
      mps_[s.nvml_index] = std::move(d);
    }
  }

  recover_at_start();

  HttpLimits limits;
  limits.max_body_bytes = cfg_.max_request_bytes;
  api_ = std::make_unique<ApiServer>(cfg_.socket_path(), limits,
                                     [this](const HttpRequest& r, const Peer& p) { return handle(r, p); });
  // Descriptor headroom: API clients never get the last descriptors colod needs for its own work
  // (database, NVML, /proc, exit.json, a shim's pipe per launch).
  if (rlimit rl{}; ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    constexpr long kReserve = 128;
    const long room = static_cast<long>(rl.rlim_cur) - kReserve;
    if (room < 256) {
      api_->set_max_connections(static_cast<int>(std::max(8L, room)));
      log(fmt::format("colod: descriptor limit {}: at most {} API connections", rl.rlim_cur, std::max(8L, room)));
    }
  }
  log("colod: listening on " + cfg_.socket_path());
  start_web_listener();
}

// [web] listen: the bound address (port 0 picks a free one) goes to <state>/web.addr once the
// socket listens, so scripts and tests wait for the file instead of guessing.
void Daemon::start_web_listener() {
  const std::string addr_file = cfg_.web_addr_path();
  ::unlink(addr_file.c_str());
  if (cfg_.web_listen.empty()) return;
  const ListenAddress a = ListenAddress::parse(cfg_.web_listen, "web.listen");
  ServerLimits l;
  l.max_connections = 64;
  l.max_connections_per_uid = 64;  // every TCP peer is the same anonymous user
  l.own_reply_headers = web_security_headers();
  web_loopback_ = a.loopback();
  web_ = std::make_unique<ApiServer>(a, l, [this](const HttpRequest& r, const Peer& p) { return web(r, p); });
  const std::string bound = a.text(web_->port());
  const std::string tmp = addr_file + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << bound << "\n";
    if (!f) throw std::runtime_error("cannot write " + tmp);
  }
  ::chmod(tmp.c_str(), 0644);
  if (::rename(tmp.c_str(), addr_file.c_str()) != 0) throw std::runtime_error("cannot write " + addr_file);
  log(fmt::format("colod: web (metrics, dashboard) on http://{}/{}", bound,
                  a.loopback() ? "" : " — not loopback: anyone who can reach it sees GPU data and job states"));
}

// The state is colod's alone: the database and its WAL hold every job's argv and environment,
// jobs/ every job's logs. Modes are set explicitly, whatever the umask or the unit created:
// directories 0700, files 0600. The state directory itself is 0711 only when others must reach
// something in it by name (the API socket, the fake NVML's state of --fake-gpus): they can
// traverse it, never list or read it.
void Daemon::secure_state_dir() {
  fs::create_directories(cfg_.jobs_dir());
  const std::string sock = cfg_.socket_path();
  // Time slots: jobs read their checkpoint request file in <state_dir>/checkpoint; MPS: jobs reach
  // their server's pipes in <state_dir>/mps unless mps_root puts them elsewhere.
  const bool others_enter = sock.rfind(cfg_.state_dir + "/", 0) == 0 || !cfg_.fake_gpus.empty() ||
                            cfg_.slots.enabled() || (cfg_.sharing == Sharing::Mps && cfg_.mps_root.empty());
  if (cfg_.slots.enabled()) checkpoint_requests_.prepare();
  ::chmod(cfg_.state_dir.c_str(), others_enter ? 0711 : 0700);
  ::chmod(cfg_.jobs_dir().c_str(), 0700);
  for (const std::string& f : {cfg_.db_path(), cfg_.db_path() + "-wal", cfg_.db_path() + "-shm",
                              cfg_.state_dir + "/colod.lock"})
    ::chmod(f.c_str(), 0600);  // files an older colod (or another umask) created
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cfg_.jobs_dir(), ec)) {
    if (e.is_directory(ec)) ::chmod(e.path().c_str(), 0700);
  }
}

Daemon::~Daemon() {
  if (signal_fd_ >= 0) ::close(signal_fd_);
  // MPS servers stay up while jobs use them; a restarted colod finds them running.
  if (live_.empty())
    for (auto& [idx, d] : mps_) {
      try {
        d->stop();
      } catch (const std::exception& e) {
        log(fmt::format("colod: stopping MPS for GPU {}: {}", idx, e.what()));
      }
    }
}

double Daemon::now() const {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// One line per entry: what a job's command or a client put in the message (a newline, an ESC) is
// escaped, so it cannot forge log lines or drive the terminal of whoever reads the log.
void Daemon::log(const std::string& line) const { std::cerr << one_line(line) << std::endl; }

std::string Daemon::job_dir(JobId id) const { return fmt::format("{}/{}", cfg_.jobs_dir(), id); }
std::string Daemon::log_path(JobId id, const std::string& stream) const {
  return fmt::format("{}/{}.log", job_dir(id), stream);
}

MiB Daemon::largest_slot_mib() const {
  MiB m = 0;
  for (const GpuSlot& s : monitor_.slots())
    if (s.healthy && !drained_.count(s.uuid)) m = std::max(m, s.total_mib);
  return m;
}

// ---- crash recovery -------------------------------------------------------------------------

void Daemon::adopt(const AttemptRow& a) {
  auto j = store_.job(a.job_id);
  Live l;
  l.attempt = a;
  l.fingerprint = j ? j->fingerprint : "";
  l.peak_mib = a.peak_mib.value_or(0);
  for (int s : a.slots) {
    ledger_.reserve(a.job_id, s, a.reserve_mib, a.exclusive, a.launch_time, j ? j->smact : std::nullopt);
    if (l.peak_mib > 0) ledger_.observe(a.job_id, s, l.peak_mib);
  }
  if (a.shim_pid) by_shim_[static_cast<int>(*a.shim_pid)] = a.id;
  // A recovery retry that already let others join before a restart is shared again on the next
  // turn (the ledger starts from its reservation); the event was recorded then, once is enough.
  if (a.exclusive && a.recovery)
    for (const EventRow& e : store_.events_of(a.job_id))
      if (e.kind == "shared" && e.time >= a.launch_time) l.share_announced = true;
  live_[a.id] = std::move(l);
}

void Daemon::recover_at_start() {
  // Backfilling's bound survives a restart: the waiting head and how often it was overtaken
  // are rebuilt from the placement events (the in-memory count started at 0 again).
  if (const auto queued = store_.jobs_in_state(JobState::Queued); !queued.empty())
    if (const int n = store_.overtakes_of(queued.front().id); n > 0) {
      sched_state_.waiting_head = queued.front().id;
      sched_state_.overtakes = n;
    }
  int adopted = 0, finished = 0, lost = 0, unstarted = 0;
  for (const AttemptRow& a : store_.open_attempts()) {
    if (!a.shim_pid) {
      // The daemon stopped between recording the attempt and recording its shim: the shim (if
      // any) never got "go", so the job never started.
      adopt(a);
      finalize(a.id, synthetic_exit(false, "colod stopped before the launch completed"));
      ++unstarted;
      continue;
    }
    adopt(a);
    // After a reboot the recorded pid (and even its start time) may name any process of this boot.
    const bool earlier_boot = launched_this_boot(a.dir) == false;
    live_[a.id].earlier_boot = earlier_boot;
    const Liveness lv = earlier_boot ? Liveness::Gone
                                     : process_liveness(static_cast<pid_t>(*a.shim_pid),
                                                        static_cast<std::uint64_t>(a.shim_start.value_or(0)));
    std::optional<ShimExit> ex;
    bool unreadable = false;
    if (lv == Liveness::Gone) {
      try {
        ex = read_shim_exit(a.dir);
      } catch (const ShimExitUnreadable& e) {
        unreadable = true;
        log(fmt::format("colod: attempt {}: {}; checked again later", a.id, e.what()));
      } catch (const std::exception& e) {
        ex = synthetic_exit(shim_started(a.dir), std::string("unreadable exit.json: ") + e.what());
      }
    }
    // Alive, or no proof either way: keep it; check_attempts() looks again every turn.
    if (lv != Liveness::Gone || unreadable) {
      ++adopted;
      Live& l = live_[a.id];
      // colod stopped after "go" but before recording the start: the shim's started marker
      // says the job runs (since the marker's time), so the job is running, not still placed.
      if (l.attempt.state != "running")
        if (const auto since = shim_started_at(a.dir)) commit_running(l, *since);
      if (auto j = store_.job(a.job_id); j && j->cancel_requested) request_cancel_signal(l);
      // Time slots: a stop or a checkpoint request recorded before colod stopped may not have
      // reached the job; sending it again is harmless (a request is idempotent).
      if (l.attempt.slot_stop) request_cancel_signal(l);
      else if (l.attempt.slot_notice) send_checkpoint_request(l);
      continue;
    }
    if (ex) {
      finalize(a.id, *ex);
      ++finished;
    } else {
      mark_lost(a.id);
      ++lost;
    }
  }
  log(fmt::format("colod: recovery: {} running job(s) re-adopted, {} finished while colod was down, {} lost, "
                  "{} launch(es) never started",
                  adopted, finished, lost, unstarted));
}

// ---- attempts -------------------------------------------------------------------------------

void Daemon::check_attempts() {
  // The one reaper: shims report through exit.json, probes through their wait status.
  int status = 0;
  for (pid_t p; (p = waitpid(-1, &status, WNOHANG)) > 0;) {
    for (const auto& [id, probe] : probes_)
      if (!probe->reaped() && probe->pid() == p) reaped_[p] = status;  // a reaped one's pid is free
  }
  std::vector<std::int64_t> ids;
  for (const auto& [id, l] : live_) ids.push_back(id);
  for (std::int64_t id : ids) {
    auto it = live_.find(id);
    if (it == live_.end()) continue;
    const AttemptRow& a = it->second.attempt;
    if (!a.shim_pid) continue;  // being launched right now
    std::optional<ShimExit> ex;
    try {
      ex = read_shim_exit(a.dir);
    } catch (const ShimExitUnreadable& e) {
      unsure(it->second, e.what());
      continue;
    } catch (const std::exception& e) {
      log(fmt::format("colod: attempt {}: unreadable exit.json: {}", a.id, e.what()));
      ex = synthetic_exit(shim_started(a.dir), std::string("unreadable exit.json: ") + e.what());
    }
    try {
      if (ex) {
        finalize(id, *ex);
        continue;
      }
    } catch (const StorageFull&) {
      throw;  // not a broken row: colod stops, and the next one records the end from exit.json
    } catch (const std::exception& e) {
      // A broken row must not take the daemon (and every other job) down with it.
      log(fmt::format("colod: attempt {}: cannot record its end: {}", a.id, e.what()));
      live_.erase(id);
      continue;
    }
    const Liveness lv = it->second.earlier_boot
                            ? Liveness::Gone
                            : process_liveness(static_cast<pid_t>(*a.shim_pid),
                                               static_cast<std::uint64_t>(a.shim_start.value_or(0)));
    if (lv == Liveness::Unknown) {
      unsure(it->second, "cannot read /proc for its shim");
      continue;
    }
    if (lv == Liveness::Alive) {
      if (it->second.unsure_logged) log(fmt::format("colod: attempt {}: its shim is visible again", a.id));
      it->second.unsure_logged = false;
      continue;
    }
    // Proven gone. exit.json is written before the shim exits: look once more, the write may
    // have raced us.
    try {
      if (auto again = read_shim_exit(a.dir)) finalize(id, *again);
      else mark_lost(id);
    } catch (const ShimExitUnreadable& e) {
      unsure(it->second, e.what());
    }
  }
}

// No proof either way (out of descriptors, /proc unreadable): the attempt stays as it is and is
// checked again next turn. Logged once until it resolves.
void Daemon::unsure(Live& l, const std::string& why) {
  if (l.unsure_logged) return;
  l.unsure_logged = true;
  log(fmt::format("colod: attempt {}: cannot tell whether its job still runs ({}); checked again each turn",
                  l.attempt.id, why));
}

void Daemon::finalize(std::int64_t attempt_id, const ShimExit& ex) {
  auto it = live_.find(attempt_id);
  if (it == live_.end()) return;
  Live l = it->second;
  AttemptRow a = l.attempt;
  const double t = now();
  Txn txn(store_.db());
  auto jr = store_.job(a.job_id);
  if (!jr) throw std::runtime_error(fmt::format("attempt {} belongs to missing job {}", a.id, a.job_id));
  JobRow j = *jr;
  Job core = j.to_core();
  a.end_time = ex.end_time > 0 ? ex.end_time : t;
  a.peak_mib = l.peak_mib > 0 ? std::optional<MiB>(l.peak_mib) : a.peak_mib;
  a.exit_code = ex.exit_code;
  a.signal = ex.signal;
  a.evidence = ex.error;
  std::string message;
  bool to_back = false;  // queued again behind everyone (its time slot ended)

  if (!ex.started) {
    a.state = "not_started";
    a.outcome = "not_started";
    if (core.state == JobState::Running) {
      // Recorded as running, yet the shim says it never started the program: undo the count.
      core.state = JobState::Placed;
      core.attempts = std::max(0, core.attempts - 1);
    }
    if (core.state == JobState::Placed) {
      if (j.cancel_requested) {
        transition(core, JobState::Cancelled);
        j.reason = "cancelled before it started";
        j.end_time = t;
      } else {
        transition(core, a.recovery ? JobState::Recovering : JobState::Queued);
      }
    }
    message = fmt::format("attempt {} did not start ({}); job {}", a.n, ex.error, to_string(core.state));
  } else {
    a.state = "finished";
    a.start_time = ex.start_time;
    if (core.state == JobState::Placed) transition(core, JobState::Running);  // colod died before recording it
    const int code = ex.exit_code ? *ex.exit_code : 128 + ex.signal.value_or(0);
    j.exit_code = code;
    std::optional<OomEvidence> oom;
    if (!j.cancel_requested && code != 0) {
      oom = find_oom_in_file(log_path(j.id, "stderr"), a.err_offset);
      if (!oom) oom = find_oom_in_file(log_path(j.id, "stdout"), a.out_offset);
    }
    if (j.cancel_requested) {
      a.outcome = "cancelled";
      transition(core, JobState::Cancelled);
      j.reason = "cancelled";
      j.end_time = t;
    } else if (code == 0) {
      a.outcome = "done";
      transition(core, JobState::Done);
      j.reason = "";
      j.end_time = t;
      if (cfg_.history && a.peak_mib && *a.peak_mib > 0) history_.record(j.fingerprint, *a.peak_mib, t);
      if (cfg_.history && !l.crowded && l.smact_samples > 0)
        history_.record_smact(j.fingerprint, l.smact_sum / l.smact_samples, t);
    } else if (oom) {
      a.outcome = "oom";
      a.evidence = fmt::format("{}: {}", oom->framework, oom->line);
      transition(core, JobState::Oom);
      // Launches that ended out of memory (time slots add launches that did not).
      int ooms = 1;
      for (const AttemptRow& other : store_.attempts_of(j.id)) ooms += other.id != a.id && other.outcome == "oom";
      if (ooms >= cfg_.max_attempts) {
        transition(core, JobState::Failed);
        j.reason = fmt::format("out of memory in {} attempt(s) (recovery.max_attempts = {})", ooms,
                               cfg_.max_attempts);
        j.end_time = t;
      } else {
        plan_recovery(core, cfg_.recovery, a.reserve_mib, a.peak_mib, largest_slot_mib(),
                      crashed_alone_on(a, ex.end_time > 0 ? ex.end_time : t));
        j.recovery_seq = store_.next_recovery_seq();
        j.reason = core.recovery_alone
                       ? "out of memory: retry on an idle GPU"
                       : fmt::format("out of memory: retry with {} free", format_mib(core.recovery_need_mib.value_or(0)));
      }
    } else if (a.slot_notice && (code == kCheckpointExitCode || a.slot_stop || ex.signal == cfg_.checkpoint_signal)) {
      // Asked to checkpoint at its slot's end: it did (exit 75), or it was stopped (or killed by
      // the request signal it does not handle). Either way it queues again, at the back.
      transition(core, JobState::Queued);
      to_back = true;
      if (code == kCheckpointExitCode) {
        a.outcome = "checkpointed";
        j.reason = "checkpointed at the end of its time slot; queued to resume";
      } else {
        // It would lose every later slot the same way: no more slots for it.
        a.outcome = "preempted";
        j.checkpoint = false;
        j.reason = fmt::format("stopped at the end of its time slot without checkpointing ({}); it runs to its end "
                               "from its next launch",
                               ex.signal ? fmt::format("signal {}", *ex.signal) : fmt::format("exit code {}", code));
      }
    } else {
      a.outcome = "failed";
      transition(core, JobState::Failed);
      j.reason = ex.error.empty() ? (ex.signal ? fmt::format("killed by signal {}", *ex.signal)
                                               : fmt::format("exit code {}", code))
                                  : ex.error;
      if (code == kCheckpointExitCode && j.checkpoint && ex.error.empty())
        j.reason += " (the checkpoint exit, but colod had not asked it to checkpoint)";
      j.end_time = t;
    }
    std::string cg;  // what the job's cgroup accounted, where it had one
    if (ex.cpu_usec) cg += fmt::format(", cpu {:.1f} s", static_cast<double>(*ex.cpu_usec) / 1e6);
    if (ex.memory_peak_bytes) cg += fmt::format(", host memory peak {}", format_mib(static_cast<MiB>(*ex.memory_peak_bytes >> 20)));
    message = fmt::format("attempt {} ended: {} (exit {}{}{}){}", a.n, a.outcome, code,
                          a.peak_mib ? fmt::format(", peak {}", format_mib(*a.peak_mib)) : "", cg,
                          a.evidence.empty() ? "" : " — " + a.evidence);
  }
  j.state = core.state;
  j.attempts = core.attempts;
  j.recovery_need_mib = core.recovery_need_mib;
  j.recovery_alone = core.recovery_alone;
  store_.update_attempt(a);
  store_.update_job(j);
  if (to_back) store_.move_to_back(j.id);
  store_.event(j.id, t, "attempt", message);
  if (ex.stdout_lost_bytes || ex.stderr_lost_bytes)
    store_.event(j.id, t, "log",
                 fmt::format("attempt {}: output past jobs.max_log not kept: {} bytes of stdout, {} bytes of stderr "
                             "(the last {} MiB of each is at its log's end)",
                             a.n, ex.stdout_lost_bytes, ex.stderr_lost_bytes, kLogTailBytes >> 20));
  txn.commit();
  log(fmt::format("colod: job {}: {}", j.id, message));
  if (a.slot_notice) checkpoint_requests_.remove(j.id);
  ledger_.release(a.job_id);
  if (a.shim_pid) by_shim_.erase(static_cast<int>(*a.shim_pid));
  live_.erase(attempt_id);
  dirty_ = true;
}

// The smallest total memory of the attempt's GPUs when it had them to itself (placed alone, or no
// other attempt on them now, as on a MIG instance): it ran out of memory there, so it needs more.
std::optional<MiB> Daemon::crashed_alone_on(const AttemptRow& a, double crash_time) {
  // Who shared its GPU when it crashed, from the attempts table alone (not from the attempts
  // colod holds right now: after a restart, or when a neighbour's exit was collected first, those
  // no longer include the job it shared with; and one placed after the crash was not there).
  if (!a.exclusive)
    for (const AttemptRow& other : store_.attempts_running_at(crash_time)) {
      if (other.id == a.id) continue;
      for (size_t k = 0; k < a.slots.size(); ++k)
        for (size_t m = 0; m < other.slots.size(); ++m)
          if (other.slots[m] == a.slots[k] && k < a.uuids.size() && m < other.uuids.size() && other.uuids[m] == a.uuids[k])
            return std::nullopt;
    }
  std::optional<MiB> total;
  for (size_t k = 0; k < a.slots.size(); ++k) {
    const GpuSlot* s = attempt_slot(a, k);
    if (!s) return std::nullopt;  // the slot is no longer that GPU: nothing known
    total = total ? std::min(*total, s->total_mib) : s->total_mib;
  }
  return total;
}

const GpuSlot* Daemon::attempt_slot(const AttemptRow& a, size_t k) const {
  const int s = a.slots[k];
  if (s < 0 || static_cast<size_t>(s) >= monitor_.slots().size() || k >= a.uuids.size()) return nullptr;
  const GpuSlot& slot = monitor_.slots()[static_cast<size_t>(s)];
  return slot.uuid == a.uuids[k] ? &slot : nullptr;
}

bool Daemon::shares_a_gpu(const AttemptRow& a) const {
  for (const auto& [id, l] : live_)
    if (id != a.id)
      for (int s : a.slots)
        if (std::find(l.attempt.slots.begin(), l.attempt.slots.end(), s) != l.attempt.slots.end()) return true;
  return false;
}

void Daemon::mark_lost(std::int64_t attempt_id) {
  auto it = live_.find(attempt_id);
  if (it == live_.end()) return;
  AttemptRow a = it->second.attempt;
  const bool started = shim_started(a.dir);
  if (!started) {
    finalize(attempt_id, synthetic_exit(false, "its shim vanished before starting the job"));
    return;
  }
  // The shim is gone: whatever is left of the job's session must go too before the job may
  // run anywhere else (never two copies at once) — and what the job detached from its session
  // (setsid) is still in the attempt's cgroup, where the host gave it one. Not after a reboot
  // (nothing of the attempt survived it; the number may be anyone's session now), nor when the
  // shim's pid now names another process (its session emptied and the number was reused).
  if (a.shim_pid && !it->second.earlier_boot) {
    const auto sid = static_cast<pid_t>(*a.shim_pid);
    if (session_still_led_by(sid, static_cast<std::uint64_t>(a.shim_start.value_or(0)))) kill_session(sid);
    if (const auto cg = shim_cgroup(a.dir, fmt::format("colo-job-{}-{}-{}", a.job_id, a.n, *a.shim_pid))) {
      if (!kill_cgroup(*cg, 5)) {
        unsure(it->second, "processes in " + *cg + " survive SIGKILL; the job is not run again until they are gone");
        return;
      }
      remove_cgroup(*cg);
    }
  }
  const double t = now();
  Txn txn(store_.db());
  JobRow j = *store_.job(a.job_id);
  a.state = "lost";
  a.outcome = "lost";
  a.end_time = t;
  a.evidence = "the job's shim vanished without an exit status (machine restart or killed)";
  if (j.cancel_requested) {
    j.state = JobState::Cancelled;
    j.reason = "cancelled";
    j.end_time = t;
  } else if (cfg_.requeue_lost) {
    // Not an edge of the core's state machine: the core never sees a running job vanish; for
    // it the job simply is queued again (a new attempt follows).
    j.state = a.recovery ? JobState::Recovering : JobState::Queued;
    j.reason = "requeued: its previous attempt was lost";
  } else {
    j.state = JobState::Failed;
    j.reason = "lost (recovery.lost = fail)";
    j.end_time = t;
  }
  store_.update_attempt(a);
  store_.update_job(j);
  store_.event(j.id, t, "attempt", fmt::format("attempt {} lost; job {}", a.n, to_string(j.state)));
  txn.commit();
  log(fmt::format("colod: job {}: attempt {} lost; job {}", j.id, a.n, to_string(j.state)));
  if (a.slot_notice) checkpoint_requests_.remove(j.id);
  ledger_.release(a.job_id);
  if (a.shim_pid) by_shim_.erase(static_cast<int>(*a.shim_pid));
  live_.erase(attempt_id);
  dirty_ = true;
}

void Daemon::request_cancel_signal(Live& l) {
  if (l.term_sent || !l.attempt.shim_pid) return;
  const pid_t pid = static_cast<pid_t>(*l.attempt.shim_pid);
  if (process_alive(pid, static_cast<std::uint64_t>(l.attempt.shim_start.value_or(0)))) ::kill(pid, SIGTERM);
  l.term_sent = true;
}

// ---- time slots -----------------------------------------------------------------------------

void Daemon::enforce_slots() {
  if (!cfg_.slots.enabled()) return;
  bool any = false;
  // Only an attempt launched with the protocol knows how it is asked (slots switched on while it
  // ran would otherwise stop a job that never heard of them).
  for (const auto& [id, l] : live_) any |= l.attempt.slot_protocol && !l.attempt.slot_stop;
  if (!any || !store_.any_waiting()) return;  // nobody waits: every job keeps its GPU
  const double t = now();
  for (auto& [id, l] : live_) {
    AttemptRow& a = l.attempt;
    if (!a.slot_protocol || a.slot_stop || a.state != "running" || !a.start_time || !a.shim_pid) continue;
    const SlotStep step = slot_step(cfg_.slots, SlotClock{*a.start_time, a.slot_notice}, t, true);
    if (step == SlotStep::Keep) continue;
    AttemptRow next = a;
    std::string what;
    if (step == SlotStep::Notify) {
      next.slot_notice = t;
      what = fmt::format("asked to checkpoint (signal {}, {}): its time slot ends; stopped at {:.0f} if still running",
                         checkpoint_signal_name(cfg_.checkpoint_signal), checkpoint_requests_.path(a.job_id),
                         *next_slot_step(cfg_.slots, SlotClock{*a.start_time, t}));
    } else {
      next.slot_stop = t;
      what = fmt::format("stopped: its time slot ended {:.0f} s after the checkpoint request", t - *a.slot_notice);
    }
    {  // Recorded first: a restarted colod re-sends what may not have gone out.
      Txn txn(store_.db());
      store_.update_attempt(next);
      store_.event(a.job_id, t, "slot", what);
      txn.commit();
    }
    a = next;
    log(fmt::format("colod: job {}: {}", a.job_id, what));
    if (step == SlotStep::Notify) send_checkpoint_request(l);
    else request_cancel_signal(l);
  }
}

void Daemon::send_checkpoint_request(Live& l) {
  const AttemptRow& a = l.attempt;
  // Slots switched off across a restart: the job keeps running; a request already delivered stands.
  if (!cfg_.slots.enabled() || !a.slot_notice || !a.start_time || !a.shim_pid) return;
  try {
    checkpoint_requests_.write(a.job_id, *next_slot_step(cfg_.slots, SlotClock{*a.start_time, a.slot_notice}));
  } catch (const std::exception& e) {
    log(fmt::format("colod: job {}: cannot write its checkpoint request file: {} (the signal still goes)", a.job_id,
                    e.what()));
  }
  const pid_t pid = static_cast<pid_t>(*a.shim_pid);
  if (process_alive(pid, static_cast<std::uint64_t>(a.shim_start.value_or(0)))) ::kill(pid, SIGUSR1);
}

// ---- launching ------------------------------------------------------------------------------

namespace {

void set_env(std::vector<std::pair<std::string, std::string>>& env, const std::string& k, const std::string& v) {
  for (auto& kv : env)
    if (kv.first == k) {
      kv.second = v;
      return;
    }
  env.emplace_back(k, v);
}

}  // namespace

// What every attempt of the job starts with: defaults, the job's own variables, colod's [env].
std::vector<std::pair<std::string, std::string>> Daemon::job_base_environment(const JobRow& j) const {
  std::vector<std::pair<std::string, std::string>> env;
  std::string home = "/", shell = "/bin/sh";
  if (passwd* pw = getpwuid(static_cast<uid_t>(j.uid))) {
    home = pw->pw_dir;
    shell = pw->pw_shell;
  }
  env = {{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
         {"HOME", home},
         {"USER", j.user},
         {"LOGNAME", j.user},
         {"SHELL", shell},
         {"LANG", "C.UTF-8"}};
  for (const auto& [k, v] : j.env.items()) set_env(env, k, v.get<std::string>());
  for (const auto& [k, v] : job_env_) set_env(env, k, v);
  return env;
}

std::vector<std::pair<std::string, std::string>> Daemon::job_environment(const JobRow& j, const AttemptRow& a) const {
  std::vector<std::pair<std::string, std::string>> env = job_base_environment(j);
  auto set = [&](const std::string& k, const std::string& v) { set_env(env, k, v); };
  std::string cvd;
  for (const std::string& u : a.uuids) cvd += (cvd.empty() ? "" : ",") + u;
  set("CUDA_VISIBLE_DEVICES", cvd);
  set("COLO_JOB_ID", std::to_string(j.id));
  set("COLO_ATTEMPT", std::to_string(a.n));
  if (a.slot_protocol) {  // daemon/checkpoint_request.h
    set("COLO_CHECKPOINT_SIGNAL", checkpoint_signal_name(cfg_.checkpoint_signal));
    set("COLO_CHECKPOINT_FILE", checkpoint_requests_.path(j.id));
    set("COLO_CHECKPOINT_EXIT", std::to_string(kCheckpointExitCode));
    set("COLO_SLOT_SECONDS", fmt::format("{:g}", cfg_.slots.slot_s));
  }
  // MPS: a client talks to one MPS server; colod runs one per GPU, so a single-GPU job joins
  // its GPU's server and a multi-GPU job runs as a plain CUDA client (docs/DAEMON.md).
  if (a.slots.size() == 1) {
    const GpuSlot& s = monitor_.slots()[static_cast<size_t>(a.slots[0])];
    if (auto m = mps_.find(s.nvml_index); m != mps_.end() && s.mig_index < 0)
      for (const auto& [k, v] : m->second->client_env()) set(k, v);
  }
  return env;
}

void Daemon::launch(const Placement& p) {
  auto jr = store_.job(p.job);
  if (!jr || (jr->state != JobState::Queued && jr->state != JobState::Recovering) || jr->cancel_requested) return;
  JobRow j = *jr;
  Job core = j.to_core();
  transition(core, JobState::Placed);
  const double t = now();

  AttemptRow a;
  a.job_id = j.id;
  a.n = static_cast<int>(store_.attempts_of(j.id).size()) + 1;
  a.state = "launching";
  a.slots = p.gpu_indices;
  for (int s : p.gpu_indices) a.uuids.push_back(monitor_.slots()[static_cast<size_t>(s)].uuid);
  a.reserve_mib = p.reserve_mib;
  a.exclusive = p.alone;
  a.recovery = p.recovery;
  a.launch_time = t;
  // Time slots apply to it: the job checkpoints and this is not a recovery retry (requeued, a
  // retry would lose what its recovery asked for).
  a.slot_protocol = j.checkpoint && cfg_.slots.enabled() && !p.recovery;
  a.out_offset = file_size(log_path(j.id, "stdout"));
  a.err_offset = file_size(log_path(j.id, "stderr"));
  {
    // 1. Durable intent first: after a crash the row tells the next colod to look for a shim.
    Txn txn(store_.db());
    a.dir = fmt::format("{}/attempt-{}", job_dir(j.id), a.n);
    a.id = store_.insert_attempt(a);
    j.state = JobState::Placed;
    // What ended the previous attempt (a checkpoint's 75, an OOM's reason) is not this one's:
    // it stays in that attempt's row and the events.
    j.reason.clear();
    j.exit_code.reset();
    store_.update_job(j);
    std::string where;
    for (size_t k = 0; k < a.slots.size(); ++k) where += fmt::format("{}GPU {}", k ? ", " : "", a.slots[k]);
    store_.event(j.id, t, "placed",
                 fmt::format("attempt {} on {} reserving {}{}{}{}", a.n, where, format_mib(a.reserve_mib),
                             a.exclusive ? " (alone)" : "", a.recovery ? " [recovery]" : "",
                             p.overtook ? fmt::format(" [backfilled ahead of waiting job {}]", *p.overtook) : ""));
    txn.commit();
  }
  fault_point("attempt-committed");
  adopt(a);
  dirty_ = true;

  ShimProcess shim;
  try {
    fs::create_directories(a.dir);
    ::chmod(a.dir.c_str(), 0700);
    write_launch_boot(a.dir);
    ShimSpec spec;
    spec.argv = j.argv;
    spec.env = job_environment(j, a);
    spec.workdir = j.workdir;
    spec.user = j.user;
    if (geteuid() == 0) {
      spec.uid = j.uid;
      spec.gid = j.gid;
    }
    spec.stdout_path = log_path(j.id, "stdout");
    spec.stderr_path = log_path(j.id, "stderr");
    spec.grace_s = cfg_.cancel_grace;
    spec.umask = j.umask;
    spec.max_log_bytes = static_cast<std::uint64_t>(cfg_.max_log_mib) * kBytesPerMiB;
    spec.cgroup_name = fmt::format("colo-job-{}-{}", j.id, a.n);
    if (a.slot_protocol) {
      spec.checkpoint_signal = cfg_.checkpoint_signal;
      checkpoint_requests_.remove(j.id);  // a request left from an earlier attempt is not for this one
    }
    write_shim_spec(a.dir, spec);
    shim = spawn_shim(shim_exe_, a.dir);
    fault_point("shim-spawned");
  } catch (const std::exception& e) {
    // Usually a resource colod lacks right now (descriptors, processes): the job is requeued
    // without counting an attempt, and launching pauses with back-off instead of spinning.
    launch_failures_ = std::min(launch_failures_ + 1, 6);
    const double pause = 0.5 * (1 << launch_failures_);
    launch_pause_until_ = mono() + pause;
    log(fmt::format("colod: job {}: launch failed: {}; launches paused for {:.0f} s", j.id, e.what(), pause));
    finalize(a.id, synthetic_exit(false, std::string("launch failed: ") + e.what()));
    return;
  }
  launch_failures_ = 0;
  // 2. Record who the shim is, 3. then let it start the job: a crash between the two leaves a
  // shim that sees EOF on its pipe and exits without running anything.
  {
    Txn txn(store_.db());
    a.shim_pid = shim.pid;
    a.shim_start = static_cast<std::int64_t>(shim.start_ticks);
    store_.update_attempt(a);
    txn.commit();
  }
  fault_point("pid-committed");
  Live& l = live_[a.id];
  l.attempt = a;
  by_shim_[shim.pid] = a.id;
  if (!send_go(shim)) return;  // the shim died; check_attempts() will notice
  fault_point("go-sent");
  commit_running(l, now());
  if (j.cancel_requested) request_cancel_signal(l);
}

void Daemon::commit_running(Live& l, double start_time) {
  AttemptRow& a = l.attempt;
  Txn txn(store_.db());
  auto cur = store_.job(a.job_id);
  if (cur && cur->state == JobState::Placed) {
    JobRow r = *cur;
    Job c = r.to_core();
    transition(c, JobState::Running);
    r.state = c.state;
    r.attempts = c.attempts;
    store_.update_job(r);
  }
  a.state = "running";
  a.start_time = start_time;
  store_.update_attempt(a);
  txn.commit();
}

void Daemon::schedule() {
  dirty_ = false;
  std::vector<Job> recovery, main;
  for (const JobRow& r : store_.jobs_in_state(JobState::Recovering))
    if (!r.cancel_requested) recovery.push_back(r.to_core());
  for (const JobRow& r : store_.jobs_in_state(JobState::Queued))
    if (!r.cancel_requested) main.push_back(r.to_core());
  if (recovery.empty() && main.empty()) {
    waiting_.clear();
    return;
  }
  std::vector<GpuSnapshot> snaps;
  for (const GpuSlot& s : monitor_.slots()) {
    GpuSnapshot g = monitor_.snapshot(s);
    if (drained_.count(s.uuid)) g.drained = true;
    if (cfg_.sharing == Sharing::Mps && g.mode == SharingMode::Plain && mps_.count(s.nvml_index)) g.mode = SharingMode::Mps;
    for (const auto& [id, l] : live_)
      if (std::find(l.attempt.slots.begin(), l.attempt.slots.end(), s.slot) != l.attempt.slots.end())
        g.running.push_back(l.attempt.job_id);
    snaps.push_back(std::move(g));
  }
  SchedulerInput in;
  in.recovery_queue = recovery;
  in.main_queue = main;
  in.gpus = snaps;
  in.ledger = &ledger_;
  in.now = now();
  in.explain = true;
  const auto decide_start = std::chrono::steady_clock::now();
  const Decision d = scheduler_.decide(in, sched_state_);
  decision_seconds_.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - decide_start).count());
  ++sched_rounds_;
  sched_placements_ += d.placements.size();
  // Why each job that stays queued waits: the blocked head says why, everyone behind it waits
  // for it (FIFO), a job asking for more GPUs than are usable now waits for them to return.
  waiting_.clear();
  if (d.blocked) {
    waiting_[d.blocked->job] = d.blocked->reason;
    bool behind = false;
    for (const std::vector<Job>* q : {&recovery, &main})
      for (const Job& job : *q) {
        if (behind)
          waiting_[job.id] = fmt::format("behind {}job {} in FIFO order{}", d.blocked->recovery ? "recovering " : "",
                                         d.blocked->job,
                                         !d.blocked->recovery && cfg_.backfill.max_overtakes > 0
                                             ? fmt::format(" (backfilling: {} of {} overtakes used)",
                                                           sched_state_.overtakes, cfg_.backfill.max_overtakes)
                                             : "");
        if (job.id == d.blocked->job) behind = true;
      }
  }
  std::string out_of_service;  // for jobs that wait for GPUs to come back
  for (const GpuSlot& s : monitor_.slots())
    if (!s.healthy || drained_.count(s.uuid))
      out_of_service += fmt::format("{}GPU {} {}", out_of_service.empty() ? "" : ", ", s.slot,
                                    !s.healthy ? "unhealthy" : "drained");
  for (const Rejection& r : d.rejections) {
    waiting_[r.job] = out_of_service.empty() ? r.reason : r.reason + " (" + out_of_service + ")";
    Txn txn(store_.db());
    auto j = store_.job(r.job);
    if (!j || (j->state != JobState::Queued && j->state != JobState::Recovering)) continue;
    // The core counts usable GPUs; drained or unhealthy ones come back, so only a job that
    // asks for more GPUs than colod manages at all can never run. The others wait.
    if (j->gpus <= static_cast<int>(monitor_.slots().size())) continue;
    j->state = JobState::Failed;
    j->reason = r.reason;
    j->end_time = now();
    store_.update_job(*j);
    store_.event(j->id, now(), "rejected", r.reason);
    txn.commit();
    log(fmt::format("colod: job {} rejected: {}", r.job, r.reason));
  }
  for (const Placement& p : d.placements) launch(p);
}

// ---- probes (colo submit --probe) ------------------------------------------------------------

void Daemon::run_probes() {
  const double m = mono();
  for (auto it = probes_.begin(); it != probes_.end();) {
    JobProbe& p = *it->second;
    const JobId id = it->first;
    if (auto r = p.reaped() ? reaped_.end() : reaped_.find(p.pid()); r != reaped_.end()) {
      p.finish(r->second, m, probe_estimator(id));
      reaped_.erase(r);
    }
    if (auto o = p.outcome()) {
      it = probes_.erase(it);
      probe_done(id, std::move(*o));
      probes_pending_ = true;
      continue;
    }
    if (const std::string why = p.kill_if_past_limits(m); !why.empty()) log(fmt::format("colod: job {}: {}", id, why));
    ++it;
  }
  if (!probes_pending_ || static_cast<int>(probes_.size()) >= cfg_.probe_concurrency) return;
  probes_pending_ = false;
  for (const JobRow& j : store_.jobs_in_state(JobState::Estimating)) {
    if (probes_.count(j.id)) continue;
    if (static_cast<int>(probes_.size()) >= cfg_.probe_concurrency) {
      probes_pending_ = true;
      break;
    }
    start_probe(j);
  }
}

JobProbe::Estimator Daemon::probe_estimator(JobId id) {
  const auto row = store_.probe(id);
  if (!row)
    return [](const estimate::ProbeTrace&) -> estimate::Estimate {
      throw UserError("no probe request stored for the job");
    };
  // Copies: it runs on the probe's own thread.
  return [request = row->request, estimator = row->estimator, gpu = cfg_.probe_gpu](const estimate::ProbeTrace& trace) {
    const auto req = estimate::ProbeRequest::from_json(request, "stored probe request");
    estimate::EstimateRequest er;
    er.gpu = gpu;
    er.batch = req.batch;
    er.trace = &trace;
    return estimate::make_estimator(estimator)->estimate(er);
  };
}

void Daemon::start_probe(const JobRow& j) {
  auto row = store_.probe(j.id);
  if (!row) {
    probe_done(j.id, JobProbe::Outcome{std::nullopt, "no probe request stored for the job", 0});
    return;
  }
  // A probe that was running when colod stopped is started again; one that keeps taking colod
  // down with it (three starts) is given up.
  if (row->runs >= 3) {
    probe_done(j.id, JobProbe::Outcome{std::nullopt, fmt::format("probe started {} times without finishing", row->runs), 0});
    return;
  }
  row->runs += 1;
  row->status = "running";
  store_.update_probe(*row);
  try {
    const auto req = estimate::ProbeRequest::from_json(row->request, "stored probe request");
    estimate::ProbeIdentity who;
    who.uid = j.uid;
    who.gid = j.gid;
    who.user = j.user;
    who.umask = j.umask;
    if (passwd* pw = getpwuid(static_cast<uid_t>(j.uid))) {
      who.user = pw->pw_name;
      who.home = pw->pw_dir;
    }
    // The job's environment: the interpreter and modules its command would find (PATH,
    // PYTHONPATH), and the settings its script reads.
    who.env = job_base_environment(j);
    ProbeSettings settings;
    settings.timeout_seconds = cfg_.probe_timeout;
    settings.address_space_bytes = static_cast<std::uint64_t>(cfg_.probe_memory_mib) << 20;
    if (cfg_.probe_python != "job") settings.interpreter = cfg_.probe_python;
    std::filesystem::create_directories(job_dir(j.id));
    probes_[j.id] = std::make_unique<JobProbe>(req, who, j.workdir, job_dir(j.id),
                                               fmt::format("colo-probe-{}-{}-{}", j.id, row->runs, ::getpid()), settings,
                                               mono());
    store_.event(j.id, now(), "probe", fmt::format("started as {} (uid {}), {}", j.user, j.uid, row->request.dump()));
    log(fmt::format("colod: job {}: probing {} as uid {}", j.id, req.model, j.uid));
  } catch (const StorageFull&) {
    throw;  // the probe may be running: colod stops, and the next one starts it again
  } catch (const std::exception& e) {
    probe_done(j.id, JobProbe::Outcome{std::nullopt, e.what(), 0});
  }
}

void Daemon::probe_done(JobId id, JobProbe::Outcome o) {
  auto jr = store_.job(id);
  auto row = store_.probe(id);
  if (!jr || jr->state != JobState::Estimating) {  // cancelled meanwhile
    if (row && row->status == "running") {
      row->status = "cancelled";
      row->seconds = o.seconds;
      store_.update_probe(*row);
    }
    return;
  }
  JobRow j = *jr;
  const std::string& failure = o.failure;
  const std::optional<estimate::Estimate>& est = o.estimate;
  const double t = now();
  Txn txn(store_.db());
  if (row) {
    row->seconds = o.seconds;
    if (est) {
      row->status = "done";
      row->peak_mib = est->peak_mib;
      row->estimate_mib = est->mib;
      row->detail = est->explanation;
    } else {
      row->status = "failed";
      row->detail = failure;
    }
    store_.update_probe(*row);
  }
  if (est) {
    j.need_mib = est->mib;
    j.need_source = est->estimator;
    j.need_explanation = est->explanation;
    store_.event(id, t, "estimated", fmt::format("{} by the probe in {:.1f} s [{}]", format_mib(est->mib), o.seconds, est->estimator));
  } else {
    // The fallback: what the submitter stated (--mem), else an unknown need (the scheduler gives
    // unknown jobs a GPU with room to spare).
    j.need_mib = j.requested_mib;
    j.need_source = j.requested_mib ? j.requested_source : "";
    j.need_explanation = fmt::format("{}; {}", failure,
                                     j.requested_mib ? "planned with the submitted " + format_mib(*j.requested_mib)
                                                     : std::string("need unknown"));
    store_.event(id, t, "probe-failed", j.need_explanation);
  }
  Job c = j.to_core();
  transition(c, JobState::Queued);
  j.state = c.state;
  store_.update_job(j);
  txn.commit();
  log(fmt::format("colod: job {}: {}", id, est ? "estimated " + format_mib(est->mib) : "probe failed: " + failure));
  dirty_ = true;
}

// ---- monitoring -----------------------------------------------------------------------------

void Daemon::tick() {
  const double t = now();
  const std::vector<MonitorEvent> events = monitor_.sample(t);
  // Per-process memory → the attempt whose shim leads the process's session.
  std::map<std::int64_t, std::map<int, MiB>> usage;  // attempt -> slot -> MiB
  for (const GpuSlot& s : monitor_.slots()) {
    for (const auto& [pid, mib] : s.process_mib) {
      auto st = read_proc_stat(pid);
      if (!st) continue;
      auto it = by_shim_.find(st->session);
      if (it != by_shim_.end()) usage[it->second][s.slot] += mib;
    }
  }
  for (const auto& [aid, per_slot] : usage) {
    auto it = live_.find(aid);
    if (it == live_.end()) continue;
    Live& l = it->second;
    for (const auto& [slot, mib] : per_slot) {
      ledger_.observe(l.attempt.job_id, slot, mib);
      if (mib > l.peak_mib) {
        l.peak_mib = mib;
        l.peak_dirty = true;
      }
    }
  }
  // Solo SM activity for the history: each running attempt alone on its GPUs adds their samples.
  for (auto& [aid, l] : live_) {
    if (l.attempt.state != "running" || l.crowded) continue;
    l.crowded = shares_a_gpu(l.attempt);
    if (l.crowded) continue;
    double sum = 0;
    int n = 0;
    for (size_t k = 0; k < l.attempt.slots.size(); ++k)
      if (const GpuSlot* s = attempt_slot(l.attempt, k); s && s->last_smact) sum += *s->last_smact, ++n;
    if (n == static_cast<int>(l.attempt.slots.size()) && n > 0) {
      l.smact_sum += sum / n;
      ++l.smact_samples;
    }
  }
  // A recovery retry that runs alone lets others join once it has run share_after_s with its
  // memory seen (recovery.share_after_peak): it keeps its observed peak + the policy's margin.
  std::vector<std::pair<JobId, std::string>> shared_now;
  if (cfg_.recovery.share_after_peak)
    for (auto& [aid, l] : live_) {
      if (l.shared || !l.attempt.exclusive || !l.attempt.recovery || l.peak_mib <= 0) continue;
      if (t - l.attempt.launch_time < cfg_.share_after_s) continue;
      const MiB keep = l.peak_mib + cfg_.conditions.margin_mib;
      for (int slot : l.attempt.slots) ledger_.share(l.attempt.job_id, slot, keep);
      l.shared = true;
      dirty_ = true;
      if (!l.share_announced)
        shared_now.emplace_back(l.attempt.job_id, fmt::format("peak {} seen: others may join, {} kept for it",
                                                            format_mib(l.peak_mib), format_mib(keep)));
      l.share_announced = true;
    }
  // Monitoring only: on a full state disk this turn's samples, peaks and GPU events are not
  // recorded (said once), and colod goes on; the peaks are written on a later turn.
  std::vector<Live*> peaks;
  try {
    Txn txn(store_.db());
    for (const auto& [job, why] : shared_now) store_.event(job, t, "shared", why);
    for (const MonitorEvent& e : events) gpu_event(e, t);
    for (const GpuSlot& s : monitor_.slots())
      if (s.healthy) store_.add_sample(t, s.slot, s.used_mib, s.last_smact, s.power_w, ledger_.reserved_on(s.slot));
    for (const auto& [aid, per_slot] : usage) {  // each running job's memory curve (dashboard)
      auto it = live_.find(aid);
      if (it == live_.end()) continue;
      MiB total = 0;
      for (const auto& [slot, mib] : per_slot) total += mib;
      store_.add_job_sample(t, it->second.attempt.job_id, total);
    }
    for (auto& [aid, l] : live_) {
      if (!l.peak_dirty) continue;
      AttemptRow a = l.attempt;
      a.peak_mib = l.peak_mib;
      store_.update_attempt(a);
      peaks.push_back(&l);
    }
    if (t > next_prune_) {
      store_.prune_samples(t - 24 * 3600);
      next_prune_ = t + 600;
    }
    txn.commit();
  } catch (const StorageFull& e) {
    if (!samples_unrecorded_) log(fmt::format("colod: GPU samples not recorded while the state disk is full: {}", e.what()));
    samples_unrecorded_ = true;
    return;
  }
  for (Live* l : peaks) {
    l->attempt.peak_mib = l->peak_mib;
    l->peak_dirty = false;
  }
  if (samples_unrecorded_) log("colod: GPU samples recorded again");
  samples_unrecorded_ = false;
  dirty_ = true;  // new samples may open room
}

void Daemon::expire_job_files() {
  constexpr int kBatch = 256;
  constexpr double kBudgetS = 0.05;  // per pass: the loop (API, cancels, slots) must not stall
  constexpr std::size_t kMaxExpiryRetries = 4096;
  next_expiry_ = mono() + std::min(60.0, std::max(cfg_.keep_logs, 0.1));
  if (cfg_.keep_logs <= 0) return;
  const double started = mono();
  Txn txn(store_.db());
  // Those that failed before, first: a removal that works again (the mount gone) is done now.
  for (auto it = expiry_retries_.begin(); it != expiry_retries_.end() && mono() - started <= kBudgetS;) {
    if (!remove_expired_job_files(*it).empty()) {
      ++it;
      continue;
    }
    log(fmt::format("colod: job {}: its files are removed now (jobs.keep_logs_days)", *it));
    it = expiry_retries_.erase(it);
  }
  const auto expired = store_.finished_between(expired_up_to_, now() - cfg_.keep_logs, kBatch);
  for (const auto& [id, end] : expired) {
    if (mono() - started > kBudgetS) {
      next_expiry_ = mono();  // the rest on the next turn
      break;
    }
    // A directory already gone (removed before a restart, which rescans from the start) has its event.
    std::error_code exists_ec;  // unreadable: not there as far as colod can tell
    if (std::string why; fs::exists(job_dir(id), exists_ec) && !(why = remove_expired_job_files(id)).empty()) {
      const bool retried = expiry_retries_.size() < kMaxExpiryRetries;  // one stuck file system must not grow it without bound
      if (retried) expiry_retries_.insert(id);
      log(fmt::format("colod: job {}: cannot remove its files after jobs.keep_logs_days: {}; {}", id, why,
                      retried ? "tried again on every pass (at most a minute apart)"
                              : fmt::format("not tried again before colod restarts ({} others are failing)",
                                            expiry_retries_.size())));
    }
    expired_up_to_ = {end, id};
  }
  txn.commit();
  if (expired.size() == static_cast<std::size_t>(kBatch)) next_expiry_ = mono();  // a backlog: go on next turn
}

std::string Daemon::remove_expired_job_files(JobId id) {
  std::error_code ec;
  fs::remove_all(job_dir(id), ec);  // a directory gone by now (removed by hand) counts as removed
  if (ec) return ec.message().empty() ? "unknown error" : ec.message();
  // The event is what `colo logs` answers from later (whatever the configuration is by then).
  store_.event(id, now(), "files_removed",
               fmt::format("its logs were removed: it ended more than {:g} days ago (jobs.keep_logs_days)",
                           cfg_.keep_logs / 86400));
  return "";
}

std::optional<std::string> Daemon::job_files_removed(const JobRow& j) {
  if (!is_terminal(j.state)) return std::nullopt;
  for (const EventRow& e : store_.events_of(j.id))
    if (e.kind == "files_removed") return e.message;
  return std::nullopt;
}

// Health is not an operator drain: nothing here touches drained_ or the stored drain flags
// (an unhealthy GPU is out of scheduling through GpuSnapshot::healthy and comes back by itself).
void Daemon::gpu_event(const MonitorEvent& e, double t) {
  using K = MonitorEvent::Kind;
  log("colod: " + e.message);
  if (e.kind == K::MetricError) return;  // rate-limited by the monitor; the GPU stays in service
  if (e.kind == K::IdentityLearned) {
    // The GPU had a placeholder identity: an operator drain of its real UUID applies now.
    const GpuSlot& s = monitor_.slots()[static_cast<size_t>(e.slots.at(0))];
    if (auto it = drained_.find(e.old_uuid); it != drained_.end()) {
      store_.set_drained(s.slot, e.old_uuid, false, "");
      store_.set_drained(s.slot, s.uuid, true, it->second);
      drained_[s.uuid] = it->second;
      drained_.erase(it);
    } else if (auto r = store_.drained_reason(s.uuid); r && r->rfind("unhealthy: ", 0) != 0) {
      drained_[s.uuid] = *r;
    }
  }
  if (e.kind == K::ProbeFailed) return;  // logged; one event row per state change is enough
  store_.event(std::nullopt, t, "gpu", e.message);
  dirty_ = true;
}

// ---- loop -----------------------------------------------------------------------------------

int Daemon::run() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  signal_fd_ = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd_ < 0) throw std::runtime_error(std::string("signalfd: ") + std::strerror(errno));

  next_tick_ = mono();
  while (!stop_) {
    const double m = mono();
    if (m >= next_tick_) {
      tick();
      next_tick_ = m + cfg_.sample_interval;
    }
    check_attempts();
    run_probes();
    if (dirty_ && mono() >= launch_pause_until_) schedule();
    enforce_slots();  // after scheduling: a job it just placed does not count as waiting
    if (mono() >= next_expiry_) expire_job_files();

    std::vector<pollfd> fds{{signal_fd_, POLLIN, 0}};
    api_->add_pollfds(fds);
    if (web_) web_->add_pollfds(fds);
    const double wait_s = std::max(0.0, std::min(next_tick_ - mono(), 0.25));
    const int rc = ::poll(fds.data(), fds.size(), static_cast<int>(wait_s * 1000) + 1);
    if (rc < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo si{};
      while (::read(signal_fd_, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
          log("colod: stopping (jobs keep running under their shims; a restarted colod re-adopts them)");
          stop_ = true;
        }
      }
    }
    api_->handle(fds, mono());
    if (web_) web_->handle(fds, mono());
  }
  // A probe this colod stops (a graceful stop, not a crash) did not fail: it is not counted
  // among the starts that give a probe up (three), and runs again after the restart.
  for (auto& [id, probe] : probes_) {
    probe->kill();
    if (auto row = store_.probe(id); row && row->status == "running") {
      row->runs = std::max(0, row->runs - 1);
      row->status = "pending";
      store_.update_probe(*row);
    }
  }
  return 0;
}

}  // namespace colo::daemon
