#pragma once
// colod's durable state (SQLite, WAL, synchronous=FULL): jobs, their attempts, events, GPU
// drain flags, GPU samples and the history estimator's observations. The database is the
// source of truth; everything in memory (ledger, monitor windows) is rebuilt from it at start.
//
// Attempt states: launching (row committed, shim maybe forked, job maybe not started) ─►
// running (the daemon told the shim to start the job) ─► finished | not_started | lost.
// docs/DAEMON.md explains why this order of writes survives kill -9 at any instant.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/job.h"
#include "core/units.h"
#include "daemon/sqlite.h"

namespace colo::daemon {

struct JobRow {
  JobId id = 0;
  std::int64_t uid = 0, gid = 0;
  std::string user;
  std::string name;
  std::vector<std::string> argv;
  nlohmann::json env = nlohmann::json::object();
  std::string workdir;
  int gpus = 1;
  std::optional<MiB> need_mib;           // what the scheduler plans with
  std::string need_source;
  std::string need_explanation;
  std::optional<MiB> requested_mib;      // what the submitter said (before history)
  std::string requested_source;
  std::string fingerprint;
  JobState state = JobState::Queued;
  double submit_time = 0;
  std::optional<double> end_time;
  int attempts = 0;                      // launches that started the program
  std::optional<MiB> recovery_need_mib;
  bool recovery_alone = false;
  std::optional<std::int64_t> recovery_seq;
  bool cancel_requested = false;
  std::optional<int> exit_code;
  std::string reason;
  bool checkpoint = false;               // it checkpoints on request: time slots apply (colo submit --checkpoint)
  std::optional<std::int64_t> queue_seq;  // its place in the main queue (read only; Store::move_to_back)
  std::optional<double> smact;            // predicted solo SM activity (0..1), if anything predicted it
  std::string smact_source;               // "user", "gpumemnet-activity", "history"
  int umask = 022;                        // the submitter's file-creation mask, the job's (colo submit sends it)

  Job to_core() const;
};

struct AttemptRow {
  std::int64_t id = 0;
  JobId job_id = 0;
  int n = 0;  // 1-based among the job's attempt rows
  std::string state;  // launching, running, finished, not_started, lost
  std::vector<int> slots;
  std::vector<std::string> uuids;
  MiB reserve_mib = 0;
  bool exclusive = false;  // the attempt runs alone on its GPUs (core: Placement::alone)
  bool recovery = false;
  std::string dir;
  std::optional<std::int64_t> shim_pid;
  std::optional<std::int64_t> shim_start;
  double launch_time = 0;
  std::optional<double> start_time, end_time;
  std::optional<int> exit_code, signal;
  std::string outcome;  // done, failed, oom, cancelled, lost, not_started
  std::string evidence; // OOM log line or failure detail
  std::optional<MiB> peak_mib;
  std::int64_t out_offset = 0, err_offset = 0;
  // Time slots: when colod asked the job to checkpoint, and when it stopped it at its slot's end.
  std::optional<double> slot_notice, slot_stop;
  bool slot_protocol = false;  // launched with the checkpoint protocol (signal, file, environment)
};

// A probe colod runs for a job submitted with --probe (status: pending → running → done | failed;
// a daemon restart puts a running probe back to pending and runs it again).
struct ProbeRow {
  JobId job_id = 0;
  nlohmann::json request;        // estimate::ProbeRequest::to_json()
  std::string estimator;         // trace, faketensor
  std::string status = "pending";
  int runs = 0;                  // starts so far
  std::optional<double> seconds, peak_mib;
  std::optional<MiB> estimate_mib;
  std::string detail;            // the estimator's explanation, or why the probe failed
};

// One GPU slot's sample (the dashboard's timelines; kept 24 h).
struct GpuSampleRow {
  double time = 0;
  int slot = 0;
  MiB used_mib = 0;
  std::optional<MiB> reserved_mib;  // Σ reservations by estimate (null in rows from before it was kept)
  std::optional<double> smact, power_w;
};

// What /metrics and the dashboard count, read in one pass.
struct StoreTotals {
  std::map<std::string, std::int64_t> jobs_by_state;
  std::optional<double> oldest_waiting_submit;  // queued, recovering or estimating
  std::int64_t waiting = 0;
  std::int64_t oom_attempts = 0;                 // attempts that ended out of memory
  std::int64_t recovered_jobs = 0;               // jobs that ran out of memory once and then finished
  std::int64_t slot_ends_checkpointed = 0;       // time slots: attempts that checkpointed when asked
  std::int64_t slot_ends_preempted = 0;          // time slots: attempts stopped without a checkpoint
};

// A finished job's plan against what it used: the estimator's error.
struct EstimateOutcome {
  JobId job = 0;
  std::string source;  // need_source: the estimator (or "user", "history", …)
  MiB need_mib = 0;
  MiB peak_mib = 0;
};

struct EventRow {
  double time = 0;
  std::optional<JobId> job_id;
  std::string kind;
  std::string message;
};

class Store {
 public:
  explicit Store(const std::string& path);  // opens and migrates
  Db& db() { return db_; }

  JobId insert_job(const JobRow& j);  // returns the new id (within the caller's transaction)
  std::optional<JobRow> job(JobId id);
  // Jobs, newest last. uid filter nullopt = everyone's. active = not terminal.
  std::vector<JobRow> jobs(std::optional<std::int64_t> uid, bool active_only, int limit = 10000);
  std::vector<JobRow> jobs_in_state(JobState s);  // queued: by id; recovering: by recovery_seq
  // The `limit` jobs that finished (done, failed, cancelled) last, by end time, the latest last.
  std::vector<JobRow> recently_finished(int limit);
  // Finished jobs (done, failed, cancelled) that ended after (end, id) = `after` and at or before
  // `until`, in that order: (id, end_time), at most `limit`.
  std::vector<std::pair<JobId, double>> finished_between(std::pair<double, JobId> after, double until, int limit);
  void update_job(const JobRow& j);    // every mutable column

  std::int64_t insert_attempt(const AttemptRow& a);
  void update_attempt(const AttemptRow& a);
  std::vector<AttemptRow> attempts_of(JobId job);
  std::vector<AttemptRow> open_attempts();  // launching or running
  // Attempts that ran at wall time `t` (started, or still open, and not ended before t).
  std::vector<AttemptRow> attempts_running_at(double t);
  std::optional<AttemptRow> attempt(std::int64_t id);

  void insert_probe(const ProbeRow& p);
  std::optional<ProbeRow> probe(JobId job);
  void update_probe(const ProbeRow& p);

  void event(std::optional<JobId> job, double time, const std::string& kind, const std::string& message);
  std::vector<EventRow> events_of(JobId job);

  std::int64_t next_recovery_seq();
  void move_to_back(JobId job);
  bool any_waiting();  // a queued or recovering job that is not being cancelled  // of the main queue (its queue_seq; update_job leaves it alone)

  // GPU drain flags survive restarts (an operator's drain is a decision, not a sample).
  void set_drained(int slot, const std::string& uuid, bool drained, const std::string& reason);
  std::optional<std::string> drained_reason(const std::string& uuid);  // nullopt = not drained

  void add_sample(double time, int slot, MiB used, std::optional<double> smact, std::optional<double> power,
                  std::optional<MiB> reserved = std::nullopt);
  std::vector<GpuSampleRow> samples_since(double since);  // by slot, then time
  // A running job's memory (all its GPUs together), for its memory curve.
  void add_job_sample(double time, JobId job, MiB mib);
  std::vector<std::pair<double, MiB>> job_samples(JobId job);
  void prune_samples(double older_than);  // both sample tables

  StoreTotals totals();
  // Finished jobs with a planned need and an observed peak (the latest `limit`).
  std::vector<EstimateOutcome> estimate_outcomes(int limit = 100000);
  // The newest events, newest first (the dashboard's OOM/recovery list).
  std::vector<EventRow> recent_events(int limit);
  // How many jobs were placed ahead of waiting job `head` (their "placed" events say
  // "[backfilled ahead of waiting job HEAD]"): the backfill bound's count, rebuilt after a restart.
  int overtakes_of(JobId head);

  // History estimator observations, keyed by job fingerprint.
  std::optional<MiB> history_peak(const std::string& fingerprint);
  void record_history(const std::string& fingerprint, MiB peak, double time);
  std::optional<double> history_smact(const std::string& fingerprint);  // mean of its solo runs' SMACT
  void record_history_smact(const std::string& fingerprint, double smact, double time);

 private:
  Db db_;
};

}  // namespace colo::daemon
