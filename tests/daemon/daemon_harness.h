#pragma once
// Test harness for colod end-to-end tests: a temporary state directory, the real build/colod
// on the fake NVML, and the real build/colo run as a child (optionally as another uid).
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace colo::daemon::testing {

std::string binary(const std::string& name);  // COLO_BINARY_DIR/name

class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A tmpfs of `size` (mount's "size=" value: "1m") at `path`, made if missing, unmounted lazily
// when this goes. Mounting needs root (as CI runs): where it fails, mounted() is false and
// error() says why, for the test to skip.
class MountedTmpfs {
 public:
  MountedTmpfs(std::string path, const std::string& size);
  ~MountedTmpfs();
  MountedTmpfs(const MountedTmpfs&) = delete;
  MountedTmpfs& operator=(const MountedTmpfs&) = delete;
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  // Unmounts now (not lazily): "" or why it failed (EBUSY while a file there is open).
  std::string unmount();

 private:
  std::string path_, error_;
  bool mounted_ = false;
};

// Writes `file` until its file system says ENOSPC: the bytes written (throws on another error).
std::uintmax_t fill_disk(const std::string& file);

struct RunResult {
  int rc = -1;
  std::string out, err;
};

// Runs argv (argv[0] is a path) with optional uid/gid switch; waits; captures stdout/stderr.
RunResult run_process(const std::vector<std::string>& argv, std::optional<uid_t> as_uid = std::nullopt,
                      std::optional<gid_t> as_gid = std::nullopt);

class ColodProcess {
 public:
  // Starts build/colod --fake-gpus SPEC --state-dir DIR [extra…] and waits for its socket. Its
  // output goes to `log_file` (DIR/colod.log by default).
  ColodProcess(std::string state_dir, std::string fake_gpus, std::vector<std::string> extra = {},
               std::string log_file = "");
  ~ColodProcess();  // SIGTERM + wait (jobs keep running under shims; tests cancel them)
  // Starts colod and waits until its API answers. With `may_exit` (a fault point armed) colod
  // may kill itself before that: start() then returns false instead of throwing.
  bool start(bool may_exit = false);
  // Environment for the next start() (e.g. COLO_FAULT_KILL_AT); empty clears it.
  void set_env(std::vector<std::pair<std::string, std::string>> env) { env_ = std::move(env); }
  // Waits until colod exits by itself (a fault point); false on timeout.
  bool wait_exit(std::chrono::seconds timeout);
  void kill9();     // SIGKILL + reap
  void stop();      // SIGTERM + reap
  bool alive();
  pid_t pid() const { return pid_; }
  std::string socket() const { return dir_ + "/colo.sock"; }
  std::string log() const;  // what colod printed so far

  // build/colo --socket S args… (as another uid when given)
  RunResult colo(const std::vector<std::string>& args, std::optional<uid_t> uid = std::nullopt) const;
  nlohmann::json colo_json(const std::vector<std::string>& args) const;  // asserts rc 0
  std::uint64_t submit(const std::vector<std::string>& args) const;      // returns the id

  // Polls `show ID --json` until the job is in a terminal state (or the timeout).
  nlohmann::json wait_terminal(std::uint64_t id, std::chrono::seconds timeout = std::chrono::seconds(60)) const;

 private:
  std::string dir_, fake_, log_file_;
  std::vector<std::string> extra_;
  pid_t pid_ = -1;
  int generation_ = 0;
  std::vector<std::pair<std::string, std::string>> env_;
};

// A gate a job waits at without polling: `path` becomes a FIFO, and the returned shell words
// block the job until open_gate(path) writes to it (no sleep, no clock).
std::string fifo_gate(const std::string& path);
// Lets the job waiting at `path` go: blocks until it opens the FIFO, writes one line.
void open_gate(const std::string& path);

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
                std::chrono::milliseconds step = std::chrono::milliseconds(100));

// Why this host gives no job (or probe) a cgroup leaf ("" when it does): made and removed once to
// find out.
std::string no_cgroups_here();

// Why a probe cannot run as nobody here ("" = it can): submitting as another user needs root, and
// the submitter must be able to read the probe package (installed: /usr/share/colo/python; a
// checkout under a private home directory only through scripts/test.sh's bind mount).
std::string cannot_probe_as_nobody();

// `colo show ID --json`.
nlohmann::json show_job(const ColodProcess& d, std::uint64_t id);
// Whether a job's `colo show --json` lists an event of this kind.
bool has_event(const nlohmann::json& job, const std::string& kind);
// A file's whole text ("" when it cannot be read).
std::string read_file(const std::string& path);
// The raw text of an HTTP/1.1 POST of `body` to `path`.
std::string http_post(const std::string& path, const std::string& body);

}  // namespace colo::daemon::testing
