#pragma once
// The per-attempt shim (`colod __shim ATTEMPT_DIR`, fd 3 = the "go" pipe). It is the parent of
// the job, so the job's exit status is never lost even when colod is killed or restarted: the
// shim outlives the daemon, waits for the job and leaves exit.json in the attempt directory.
//
//   1. waits for one byte on fd 3: colod writes it only after the shim's pid is committed to
//      the database; EOF (the daemon died first) or SIGTERM means "never start" → exit.json
//      says started=false and the daemon requeues the job without counting an attempt;
//   2. marks ATTEMPT_DIR/started, forks the job in its own process group (as the submitter's
//      uid/gid when root), its stdout/stderr pipes relayed to the job's log files, bounded by
//      max_log_bytes (log_relay.h);
//   3. SIGTERM → SIGTERM to the job's process group, SIGKILL after the grace period;
//   4. when the job's main process exits, kills what is left of the session, then writes
//      exit.json atomically (write + fsync + rename).
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace colo::daemon {

// colod's own soft RLIMIT_NOFILE before it raised it: the shim gives jobs that one back.
inline constexpr const char* kJobNofileEnv = "COLO_JOB_NOFILE_SOFT";

struct ShimSpec {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  // the complete environment
  std::string workdir;
  std::string user;
  long uid = -1, gid = -1;  // -1: keep the shim's (non-root daemon)
  std::string stdout_path, stderr_path;
  double grace_s = 10;
  std::string cgroup_name;  // cgroup v2 leaf for the job where the host allows (job_cgroup.h)
  // colod's SIGUSR1 to the shim becomes this signal to the job's process group (time slots'
  // checkpoint request, daemon/checkpoint_request.h); 0 = the job is not asked.
  int checkpoint_signal = 0;
  int umask = 022;  // the submitter's file-creation mask (colod's own is 077)
  // Per stream and attempt, what of the job's output reaches its log file (log_relay.h); 0 = all.
  std::uint64_t max_log_bytes = 0;
};

struct ShimExit {
  bool started = false;
  std::optional<int> exit_code;  // normal exit
  std::optional<int> signal;     // killed by a signal
  std::string error;             // exec failure, bad spec, cancelled before start
  double start_time = 0, end_time = 0;
  std::string cgroup;                              // the job's cgroup leaf, empty if none
  std::optional<std::uint64_t> cpu_usec;           // CPU time of everything in it
  std::optional<std::uint64_t> memory_peak_bytes;  // host memory peak (memory controller only)
  // Output past jobs.max_log not kept in the logs (log_relay.h: LogRelay::lost), per stream.
  std::uint64_t stdout_lost_bytes = 0, stderr_lost_bytes = 0;
};

// exit.json exists (or may) but could not be read right now (out of descriptors, I/O error):
// proves nothing about the job; ask again later.
struct ShimExitUnreadable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void write_shim_spec(const std::string& dir, const ShimSpec& spec);
// Records the boot the attempt is launched in (its "boot" file), before its shim is spawned.
void write_launch_boot(const std::string& dir);
// Whether the attempt was launched in this boot: false after a reboot (nothing of it can run,
// and its recorded shim pid may name any process now). An attempt without the record (an older
// colod's) is judged by its spec.json's time against this boot's start; nullopt when neither
// can be read.
std::optional<bool> launched_this_boot(const std::string& dir);
// nullopt while the shim has not finished (no exit.json yet). Throws ShimExitUnreadable when
// the file cannot be read now, another exception when it is corrupt.
std::optional<ShimExit> read_shim_exit(const std::string& dir);
bool shim_started(const std::string& dir);  // the started marker exists
std::optional<double> shim_started_at(const std::string& dir);  // its time (wall clock, seconds), if it exists
// The job's cgroup leaf the shim made (its "cgroup" file), when it made one and the path is the
// leaf colod asked for (colo-job-<job>-<attempt>-<shim pid> under a cgroup2 mount).
std::optional<std::string> shim_cgroup(const std::string& dir, const std::string& expected_name);

// One pass over the shim's exited children (the job and the orphans re-parented to it): reaps
// them all; true, with the job's wait status in `status`, when `child` was among them. The job's
// status comes from the same pass that reaps orphans: a separate waitpid(-1) after a
// waitpid(child) could reap the job in between and lose its status for good (the shim would then
// wait forever).
bool reap_exited(pid_t child, int& status);

// The shim's main; returns its exit status.
int shim_main(const std::string& dir);

}  // namespace colo::daemon
