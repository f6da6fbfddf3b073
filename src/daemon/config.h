#pragma once
// colod's configuration (TOML, e.g. /etc/colo/colod.toml; packaging/colod.toml documents every
// key). Command-line flags (--state-dir, --fake-gpus, --socket, --policy) override the file.
#include <csignal>
#include <string>
#include <vector>

#include "core/backfill.h"
#include "core/policy/policies.h"
#include "core/policy/policy_definition.h"
#include "core/recovery.h"
#include "core/time_slots.h"
#include "core/units.h"

namespace colo::daemon {

enum class Sharing { Streams, Mps };

struct DaemonConfig {
  // [paths]
  std::string state_dir = "/var/lib/colo";  // colo.db, jobs/<id>/…, fake-nvml/
  std::string socket;                       // default <state_dir>/colo.sock
  // [gpus]
  std::vector<std::string> managed;         // NVML indices or UUIDs; empty = every GPU
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string fake_gpus;                    // "2x40GiB": the in-tree fake NVML (tests, demos)
  // SMACT on GPUs without NVML GPM: DCGM's embedded host engine, a running nv-hostengine's
  // address, or "off"; the library (empty: libdcgm.so.4, then .so.3; with fake GPUs the fake).
  std::string dcgm = "embedded";
  std::string dcgm_library;
  // [policy]
  std::string policy = "magm";  // a shipped policy (or alias) or one of `policies`
  std::vector<PolicyDefinition> policies;  // [policies.NAME]: the site's own (client/policy_file.h)
  Conditions conditions;
  Backfill backfill;  // [policy] backfill = N (overtakes per waiting head), backfill_depth
  // [recovery]
  RecoveryConfig recovery;
  int max_attempts = 5;        // launches per job before an OOM becomes a failure
  Seconds share_after_s = 60;  // with recovery.share_after_peak: how long a retry runs alone first
  bool requeue_lost = true;    // a job whose process vanished with the machine: requeue or fail
  // [estimator]
  bool history = true;         // reuse the observed peak of the same job fingerprint
  double history_margin = 0.10;  // on top of the observed peak
  Seconds probe_timeout = 300;   // colo submit --probe: wall clock per probe
  MiB probe_memory_mib = 32 * 1024;  // the probe's address-space limit
  int probe_concurrency = 1;
  std::string probe_gpu = "a100-40gb";  // calibration profile for the probe's estimate
  // The Python a probe runs under: "job" = the interpreter the probed job's command names (its
  // PyTorch and packages), else colo's ($COLO_PYTHON, /usr/bin/python3); or an absolute path, always.
  std::string probe_python = "job";
  // [sharing]
  Sharing sharing = Sharing::Streams;
  std::string mps_control = "nvidia-cuda-mps-control";
  std::string mps_root;        // default <state_dir>/mps
  // [sampling]
  Seconds sample_interval = 1.0;
  Seconds window = 90.0;
  // [web] /metrics (Prometheus) and the read-only dashboard on TCP; empty = off.
  std::string web_listen;             // "127.0.0.1:9400"; the bound address goes to <state_dir>/web.addr
  bool web_public_job_details = false;  // anonymous (TCP) visitors see job names, users and job pages
  std::string web_assets;             // default: the source tree's or installed web/ directory
  // [slots] fairness time slots for jobs submitted with --checkpoint (core/time_slots.h,
  // daemon/checkpoint_request.h): length_s (0 = off), notice_s, signal.
  TimeSlots slots{0, 600, 60};
  int checkpoint_signal = SIGUSR1;
  // [jobs]
  Seconds cancel_grace = 10.0;  // SIGTERM, then SIGKILL after this
  std::size_t max_request_bytes = 1024 * 1024;
  // What each attempt's stdout and stderr may write to its log file; past it the last 1 MiB is
  // kept (daemon/log_relay.h). 0 = no limit. Assumption: generous for a training log, small
  // beside the disk colod's state directory shares with everything else.
  MiB max_log_mib = 1024;
  // A finished job's directory (its logs, probe trace, attempt records) is removed this long
  // after it ended; its database row (colo show, the history estimator) stays. 0 = never.
  // Assumption: a month to read a job's output, as a site would set journal retention.
  Seconds keep_logs = 30 * 86400.0;

  std::string socket_path() const { return socket.empty() ? state_dir + "/colo.sock" : socket; }
  std::string db_path() const { return state_dir + "/colo.db"; }
  std::string jobs_dir() const { return state_dir + "/jobs"; }
  std::string web_addr_path() const { return state_dir + "/web.addr"; }
  std::string checkpoint_dir() const { return state_dir + "/checkpoint"; }
};

// Reads a TOML file over the defaults. Throws colo::UserError "FILE:LINE: …" for syntax errors,
// unknown keys, wrong types and out-of-range values.
DaemonConfig load_config(const std::string& path, DaemonConfig base = {});
// Why colod cannot place jobs with the configured policy, empty when it can: the shipped node-weight
// policy (it ranks Slurm nodes; on colod's one server every GPU has the same rank), or
// [policy] adds_progress = true where it could not apply (conditions off, a whole-GPU policy).
// colod refuses these rather than ignore them (checked again after --policy).
std::string policy_problem(const DaemonConfig& c);

}  // namespace colo::daemon
