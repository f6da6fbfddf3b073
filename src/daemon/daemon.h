#pragma once
// colod: a single-threaded loop that drives the scheduler core. Each turn it
//   • answers API requests (api_routes.cpp),
//   • collects finished attempts from their shims' exit.json (OOM → core recovery rules),
//   • samples the GPUs every `sample_interval` (windows, per-process peaks → ledger, health),
//   • asks Scheduler::decide for placements and launches them.
// The database is written before every externally visible step; docs/DAEMON.md has the
// crash-recovery argument.
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ledger.h"
#include "core/scheduler.h"
#include "daemon/api_server.h"
#include "daemon/checkpoint_request.h"
#include "daemon/config.h"
#include "daemon/gpu_monitor.h"
#include "daemon/history_estimator.h"
#include "daemon/job_probe.h"
#include "daemon/launcher.h"
#include "daemon/prometheus_text.h"
#include "daemon/shim.h"
#include "daemon/store.h"
#include "gpu/mps.h"

namespace colo::daemon {

class Daemon {
 public:
  // `job_env`: variables every job gets on top of its own (the fake NVML's, in tests).
  // `shim_exe`: the binary to run as `shim_exe __shim DIR` (colod itself).
  Daemon(DaemonConfig cfg, std::unique_ptr<gpu::GpuBackend> backend,
         std::vector<std::pair<std::string, std::string>> job_env, std::string shim_exe);
  ~Daemon();

  // Runs until SIGTERM/SIGINT; returns the exit status.
  int run();

  // API entry point (also used directly by tests).
  HttpResponse handle(const HttpRequest& req, const Peer& peer);
  // The web listener's entry point (web_routes.cpp): /metrics, the dashboard, its JSON.
  HttpResponse web(const HttpRequest& req, const Peer& peer);
  // Prometheus exposition of the GPUs and colod (daemon_metrics.cpp).
  // `dcgm_model_label`: also dcgm-exporter's camelCase modelName label (/metrics?labels=dcgm).
  std::string metrics_text(bool dcgm_model_label = false);

 private:
  struct Live {
    AttemptRow attempt;
    std::string fingerprint;
    MiB peak_mib = 0;
    bool term_sent = false;
    bool peak_dirty = false;
    bool unsure_logged = false;  // liveness could not be read; logged once
    bool shared = false;         // a recovery retry held alone that now lets others join
    bool share_announced = false;  // its "shared" event is recorded (before a restart): not again
    // Its GPUs' SMACT while it had them to itself (the history's solo activity); `crowded` once
    // another attempt shared one of them. In memory: a restart starts the sums again.
    double smact_sum = 0;
    int smact_samples = 0;
    bool crowded = false;
    // Launched before the machine last booted (found so at recovery): none of it runs, and its
    // recorded shim pid is never looked at or signalled.
    bool earlier_boot = false;
  };

  double now() const;
  void log(const std::string& line) const;
  void secure_state_dir();
  void recover_at_start();
  void adopt(const AttemptRow& a);
  void check_attempts();
  // colo submit --probe: start probes for estimating jobs, collect finished ones, kill late ones.
  void run_probes();
  void start_probe(const JobRow& j);
  void probe_done(JobId id, JobProbe::Outcome o);
  JobProbe::Estimator probe_estimator(JobId id);  // the job's trace estimate, runnable off the loop
  void finalize(std::int64_t attempt_id, const ShimExit& ex);
  void mark_lost(std::int64_t attempt_id);
  std::optional<MiB> crashed_alone_on(const AttemptRow& a, double crash_time);
  // The monitor's slot that is still GPU k of the attempt (same index and UUID), or null: a slot
  // index from the database may name another GPU after the managed GPUs or MIG layout changed.
  const GpuSlot* attempt_slot(const AttemptRow& a, size_t k) const;
  // Another open attempt holds one of this attempt's GPUs.
  bool shares_a_gpu(const AttemptRow& a) const;
  void unsure(Live& l, const std::string& why);
  void commit_running(Live& l, double start_time);  // placed → running, the attempt's start recorded
  void tick();
  void gpu_event(const MonitorEvent& e, double t);
  void schedule();
  void launch(const Placement& p);
  void request_cancel_signal(Live& l);
  // Time slots (core/time_slots.h): ask checkpointing jobs whose slot ends while others wait,
  // stop those past their slot. Every step is recorded before the signal is sent.
  void enforce_slots();
  void send_checkpoint_request(Live& l);
  // jobs.keep_logs_days: removes the directories of jobs that ended longer ago (a bounded batch
  // per pass, so the loop stays responsive while a backlog is worked off).
  void expire_job_files();
  // Removes one expired job's directory and records it (event "files_removed"); why not when the
  // removal failed (what stays is tried again on expire_job_files's next passes), else empty.
  std::string remove_expired_job_files(JobId id);
  // Why the job's logs are gone, when expire_job_files removed them (its "files_removed" event).
  std::optional<std::string> job_files_removed(const JobRow& j);
  std::vector<std::pair<std::string, std::string>> job_base_environment(const JobRow& j) const;
  std::vector<std::pair<std::string, std::string>> job_environment(const JobRow& j, const AttemptRow& a) const;
  std::string job_dir(JobId id) const;
  std::string log_path(JobId id, const std::string& stream) const;
  MiB largest_slot_mib() const;

  // API (api_routes.cpp)
  HttpResponse route(const HttpRequest& req, const Peer& peer);
  HttpResponse submit(const HttpRequest& req, const Peer& peer);
  HttpResponse list_jobs(const HttpRequest& req, const Peer& peer);
  HttpResponse show_job(JobId id, const Peer& peer);
  HttpResponse cancel_job(JobId id, const Peer& peer);
  HttpResponse job_logs(JobId id, const HttpRequest& req, const Peer& peer);
  HttpResponse list_gpus(const Peer& peer);
  HttpResponse drain_gpu(const std::string& key, bool drain, const HttpRequest& req, const Peer& peer);
  HttpResponse status(const Peer& peer);
  std::optional<JobRow> visible_job(JobId id, const Peer& peer);

  // Web (web_routes.cpp)
  std::string web_assets_dir() const;
  HttpResponse serve_asset(const std::string& rel);
  HttpResponse web_overview(const Peer& peer);
  HttpResponse web_gpu_samples(const HttpRequest& req);
  HttpResponse web_job(const std::string& id_text, const Peer& peer);
  bool web_shows_details(const Peer& peer) const;
  nlohmann::json web_job_summary(const JobRow& j, bool details);
  void start_web_listener();
  static Histogram new_decision_histogram();
  nlohmann::json job_json(const JobRow& j, bool detail);

  DaemonConfig cfg_;
  Store store_;
  GpuMonitor monitor_;
  Scheduler scheduler_;
  SchedulerState sched_state_;
  Ledger ledger_;
  HistoryEstimator history_;
  std::vector<std::pair<std::string, std::string>> job_env_;
  std::string shim_exe_;
  std::map<std::int64_t, Live> live_;          // open attempts by attempt id
  std::map<int, std::int64_t> by_shim_;        // shim pid (= job session id) -> attempt id
  std::map<JobId, std::unique_ptr<JobProbe>> probes_;  // running probes by job
  std::map<int, int> reaped_;                  // child pid -> wait status, from the reaper (probes read theirs)
  bool probes_pending_ = true;                 // an estimating job may be waiting for a probe slot
  // Operator drains (`colo drain`, persisted, lifted only by `colo resume`): uuid -> reason.
  // A GPU the monitor finds unhealthy is out of scheduling too, but that is its health
  // (GpuSlot::healthy, never persisted), lifted by the monitor when the GPU answers again.
  std::map<std::string, std::string> drained_;
  // Why each queued/recovering job is not running, from the latest scheduling round.
  std::map<JobId, std::string> waiting_;
  std::map<int, std::unique_ptr<gpu::MpsDaemon>> mps_;  // NVML index -> its MPS control daemon
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<ApiServer> web_;  // [web] listen: /metrics and the dashboard (TCP), or none
  bool web_loopback_ = false;       // it listens on a loopback address: Host must be a loopback name
  // Scheduler counters for /metrics (in memory: they restart at zero with colod).
  std::uint64_t sched_rounds_ = 0;
  std::uint64_t sched_placements_ = 0;
  Histogram decision_seconds_ = new_decision_histogram();
  bool dirty_ = true;      // something changed: run the scheduler
  int launch_failures_ = 0;         // consecutive launches that failed (back-off exponent)
  bool samples_unrecorded_ = false;  // the last turn's samples hit a full state disk (said once)
  double launch_pause_until_ = 0;   // monotonic: no scheduling before this after a failed launch
  double next_tick_ = 0;   // monotonic
  double next_prune_ = 0;
  // jobs.keep_logs_days: the next pass (monotonic) and how far the passes got (end time, id).
  double next_expiry_ = 0;
  std::pair<double, JobId> expired_up_to_{0, 0};
  // Expired jobs whose directory could not be removed (a busy mount, a read-only file system):
  // tried again on every pass, up to kMaxExpiryRetries of them (the rest after a restart).
  std::set<JobId> expiry_retries_;
  CheckpointRequests checkpoint_requests_;
  int signal_fd_ = -1;
  bool stop_ = false;
};

}  // namespace colo::daemon
