#pragma once
// `colo slurm recover`: the cluster's OOM recovery service. Each pass reads the jobs from Slurm
// and
//  * for a job Slurm requeued and held because `colo run` exited with RequeueExitHold (an
//    out-of-memory crash): plans the next request by the loose recovery rule (escalation.h),
//    writes the plan to disk, applies it (scontrol update … StartTime=now) and releases the job;
//    after max_retries OOMs, or an OOM on a whole GPU, it leaves the job held and says why;
//  * for a finished colo job: records its observed peak in the history (peak_history.h).
// Crash safety: the plan is on disk before Slurm is touched, and a plan is keyed by the job's
// restart count, so an agent killed at any point re-applies the same plan after a restart and
// never escalates one OOM twice. One agent per state directory (<state_dir>/agent.lock): a second
// one would plan and apply the same OOM's escalation again.
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>

#include "common/exclusive_lock.h"
#include "slurm/site_settings.h"
#include "slurm/slurm_control.h"

namespace colo::slurm {

struct AgentJob {
  int restart = 0;        // the restart count the entry is about
  std::string phase;      // "planned", "released", "gave_up", "left_held" (held without an OOM report), "recorded"
  std::string tres;       // the planned request
  int ooms = 0;           // OOM requeues handled so far
  std::string note;       // why it gave up, or what it did last
  bool comment_pending = false;  // the note is still to be set as the job's AdminComment (retried each pass)
};

class RecoverAgent {
 public:
  // Locks <state_dir>/agent.lock (colo::UserError when another agent holds it) and loads
  // <state_dir>/agent.json (creating state_dir and its reports/ drop box as needed).
  // Reports of jobs Slurm no longer lists are removed once report_min_age_s old (by ctime): the
  // age covers a job that finished between the agent's squeue and its sweep.
  RecoverAgent(SiteSettings site, SlurmControl& slurm, std::ostream& log, std::int64_t report_min_age_s = 3600);
  // One pass over Slurm's jobs. Slurm errors on one job are logged and retried next pass; the
  // number of jobs whose handling failed this pass is returned (`--once` exits non-zero on it).
  int step();
  const std::map<std::uint64_t, AgentJob>& jobs() const { return jobs_; }
  static std::string state_path(const std::string& state_dir);

 private:
  void handle_held(const SlurmJob& j);
  void handle_finished(const SlurmJob& j);
  void apply(const SlurmJob& j, AgentJob& a);
  void set_comment(const SlurmJob& j, AgentJob& a);  // the note as AdminComment; comment_pending stays on failure
  void save() const;

  SiteSettings site_;
  std::unique_ptr<ExclusiveLock> lock_;  // held while the agent lives
  SlurmControl& slurm_;
  std::ostream& log_;
  std::map<std::uint64_t, AgentJob> jobs_;
  std::int64_t report_min_age_s_;
  // Passes in a row in which a planned job was missing from Slurm's list, and since when (in
  // memory: a restarted agent starts counting again, which only delays the drop).
  std::map<std::uint64_t, std::pair<int, std::int64_t>> unseen_;
  static constexpr int kPlanGoneAfter = 3;
};

}  // namespace colo::slurm
