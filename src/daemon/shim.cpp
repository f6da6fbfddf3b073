#include "daemon/shim.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <utility>

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/session_keyring.h"
#include "daemon/job_cgroup.h"
#include "daemon/log_relay.h"
#include "daemon/proc.h"

extern char** environ;

namespace colo::daemon {

using nlohmann::json;

namespace {

// colod raises its own soft descriptor limit to the hard one (colod_main.cpp) and leaves the
// original in kJobNofileEnv: the job gets the limit it would have had, not colod's headroom.
void restore_job_nofile_limit() {
  const char* v = std::getenv(kJobNofileEnv);
  if (!v || !*v) return;
  char* end = nullptr;
  errno = 0;
  const unsigned long long soft = std::strtoull(v, &end, 10);
  if (errno != 0 || *end != '\0') return;
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && soft < rl.rlim_cur) {
    rl.rlim_cur = static_cast<rlim_t>(soft);
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
}

double wall_now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double mono_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Renames tmp over dir/name, then syncs the directory so that the rename outlives a power cut:
// 0 or the rename's errno.
int rename_into_place(const std::string& dir, const std::string& tmp, const std::string& name) {
  if (::rename(tmp.c_str(), (dir + "/" + name).c_str()) != 0) return errno;
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return 0;
}

// Writes all of `content` from the file's start: 0 or the errno that stopped it.
int write_whole(int fd, const std::string& content) {
  size_t off = 0;
  while (off < content.size()) {
    const ssize_t n = ::pwrite(fd, content.data() + off, content.size() - off, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    off += static_cast<size_t>(n);
  }
  return 0;
}

// Writes `content` to dir/name atomically and durably.
void write_atomic(const std::string& dir, const std::string& name, const std::string& content) {
  const std::string tmp = dir + "/." + name + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("open " + tmp + ": " + std::strerror(errno));
  if (const int err = write_whole(fd, content); err != 0) {
    ::close(fd);
    throw std::runtime_error("write " + tmp + ": " + std::strerror(err));
  }
  ::fsync(fd);
  ::close(fd);
  if (const int err = rename_into_place(dir, tmp, name); err != 0)
    throw std::runtime_error("rename " + tmp + ": " + std::strerror(err));
}

// Room for exit.json, taken before the job starts (reserve_exit_room): a file system the job's own
// output fills up must not cost its exit status, or colod could only call the attempt lost and run
// the job again. -1 when there is none (not reserved yet, or used).
int g_exit_room = -1;
constexpr off_t kExitRoomBytes = 64 << 10;  // exit.json is well under 1 KiB

bool reserve_exit_room(const std::string& dir, std::string* why) {
  const std::string tmp = dir + "/.exit.json.tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    *why = "open " + tmp + ": " + std::strerror(errno);
    return false;
  }
  // posix_fallocate writes the blocks itself where the file system has no fallocate.
  if (const int rc = ::posix_fallocate(fd, 0, kExitRoomBytes); rc != 0 || ::fsync(fd) != 0) {
    *why = "reserve room for exit.json in " + dir + ": " + std::strerror(rc != 0 ? rc : errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    return false;
  }
  g_exit_room = fd;
  return true;
}

// exit.json written into the room reserved for it (no new blocks needed), then renamed into place.
bool write_into_exit_room(const std::string& dir, const std::string& content) {
  const int fd = std::exchange(g_exit_room, -1);
  if (fd < 0 || content.size() > static_cast<size_t>(kExitRoomBytes)) {
    if (fd >= 0) ::close(fd);
    return false;
  }
  const bool ok = write_whole(fd, content) == 0 && ::ftruncate(fd, static_cast<off_t>(content.size())) == 0 &&
                  ::fsync(fd) == 0;
  ::close(fd);
  const std::string tmp = dir + "/.exit.json.tmp";
  return ok && rename_into_place(dir, tmp, "exit.json") == 0;
}

void write_exit(const std::string& dir, const ShimExit& e) {
  json j{{"started", e.started}, {"error", e.error}, {"start_time", e.start_time}, {"end_time", e.end_time}};
  j["exit_code"] = e.exit_code ? json(*e.exit_code) : json(nullptr);
  j["signal"] = e.signal ? json(*e.signal) : json(nullptr);
  if (!e.cgroup.empty()) j["cgroup"] = e.cgroup;
  if (e.cpu_usec) j["cpu_usec"] = *e.cpu_usec;
  if (e.memory_peak_bytes) j["memory_peak_bytes"] = *e.memory_peak_bytes;
  if (e.stdout_lost_bytes) j["stdout_lost_bytes"] = e.stdout_lost_bytes;
  if (e.stderr_lost_bytes) j["stderr_lost_bytes"] = e.stderr_lost_bytes;
  if (!write_into_exit_room(dir, j.dump() + "\n")) write_atomic(dir, "exit.json", j.dump() + "\n");
}

ShimSpec spec_from_json(const json& j) {
  ShimSpec s;
  s.argv = j.at("argv").get<std::vector<std::string>>();
  for (const auto& kv : j.at("env")) s.env.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<std::string>());
  s.workdir = j.at("workdir").get<std::string>();
  s.user = j.at("user").get<std::string>();
  s.uid = j.at("uid").get<long>();
  s.gid = j.at("gid").get<long>();
  s.stdout_path = j.at("stdout").get<std::string>();
  s.stderr_path = j.at("stderr").get<std::string>();
  s.grace_s = j.at("grace_s").get<double>();
  s.cgroup_name = j.value("cgroup_name", std::string());
  s.checkpoint_signal = j.value("checkpoint_signal", 0);
  s.umask = j.value("umask", 022);  // a spec written before colod sent the mask
  s.max_log_bytes = j.value("max_log_bytes", std::uint64_t{0});
  return s;
}

// Marks every descriptor from `first` up close-on-exec, so nothing colod or the shim holds (the
// database, API sockets, pipes) reaches the job. close_range(CLOSE_RANGE_CLOEXEC) needs Linux
// 5.11; older kernels get the same through /proc/self/fd.
void cloexec_from(int first, bool close_now = false) {
#ifdef CLOSE_RANGE_CLOEXEC
  if (::close_range(static_cast<unsigned>(first), ~0U, close_now ? 0 : CLOSE_RANGE_CLOEXEC) == 0) return;
#endif
  std::vector<int> fds;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      char* end = nullptr;
      const long fd = std::strtol(e->d_name, &end, 10);
      if (end && *end == '\0' && fd >= first && fd != dirfd(d)) fds.push_back(static_cast<int>(fd));
    }
    closedir(d);
  }
  for (int fd : fds) {
    if (close_now) ::close(fd);
    else ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
}

// Kills every process below the shim — the job's own session and anything it detached with
// setsid or a double fork: the shim is a child subreaper, so orphans are re-parented to it and
// stay in its tree. Returns once the shim has no child left (or after `limit_s`).
void kill_every_descendant(double limit_s) {
  const double give_up = mono_now() + limit_s;
  for (;;) {
    for (pid_t p : descendants_of(getpid())) ::kill(p, SIGKILL);
    pid_t w;
    while ((w = waitpid(-1, nullptr, WNOHANG)) > 0) {
    }
    if (w < 0 && errno == ECHILD) return;
    if (mono_now() >= give_up) {
      std::fprintf(stderr, "colo-shim: processes of the job survive SIGKILL after %.0f s\n", limit_s);
      return;
    }
    usleep(10000);
  }
}

// Child side of the job fork: never returns. Reports an exec failure through err_fd.
[[noreturn]] void exec_job(const ShimSpec& s, int out_fd, int err_fd_log, int report_fd, const char* cgroup_procs) {
  auto die = [&](const char* what) {
    const std::string msg = std::string(what) + ": " + std::strerror(errno);
    [[maybe_unused]] ssize_t w = ::write(report_fd, msg.data(), msg.size());
    _exit(127);
  };
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGPIPE, SIGUSR1}) signal(sig, SIG_DFL);
  setpgid(0, 0);
  // Into the job's cgroup before anything can fork (failure leaves the process-tree containment).
  if (cgroup_procs && *cgroup_procs) join_cgroup(cgroup_procs);
  const int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd_log, 2) < 0) die("redirect");
  // Only root can (and must) become the submitter; a non-root daemon runs jobs as itself.
  if (geteuid() == 0 && s.uid >= 0) {
    const gid_t g = static_cast<gid_t>(s.gid);
    if (initgroups(s.user.c_str(), g) != 0 && setgroups(1, &g) != 0) die("setgroups");
    if (setgid(g) != 0) die("setgid");
    if (setuid(static_cast<uid_t>(s.uid)) != 0) die("setuid");
  }
  if (!join_own_session_keyring()) die("a session keyring of its own");
  ::umask(static_cast<mode_t>(s.umask & 0777));
  restore_job_nofile_limit();
  if (!s.workdir.empty() && chdir(s.workdir.c_str()) != 0) die(("chdir " + s.workdir).c_str());
  cloexec_from(3);  // report_fd is close-on-exec already: it stays usable until execvp
  clearenv();
  for (const auto& [k, v] : s.env) setenv(k.c_str(), v.c_str(), 1);
  std::vector<char*> argv;
  for (const auto& a : s.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  die(("exec " + s.argv[0]).c_str());
  _exit(127);
}

// A pipe of the job's output (-1 once at end of file) and where it goes.
struct RelayedStream {
  int fd;
  LogRelay* relay;
};

// Reads what the job's pipe holds now (a bounded amount, so signals are not kept waiting) into
// its relay; at end of file (every writer gone) closes the pipe and sets `fd` to -1.
void relay_available(int& fd, LogRelay& relay) {
  char buf[65536];
  for (int rounds = 0; fd >= 0 && rounds < 16; ++rounds) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      relay.take(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    ::close(fd);  // end of file, or an error no later read would mend
    fd = -1;
  }
}

bool any_open(const RelayedStream (&streams)[2]) { return streams[0].fd >= 0 || streams[1].fd >= 0; }

// Waits up to `timeout_ms` for output on the open pipes (or for `wake_fd`, a signalfd, when
// given; with nothing to watch, a plain wait), then relays what they hold.
void relay_when_ready(RelayedStream (&streams)[2], int wake_fd, int timeout_ms) {
  pollfd fds[3];
  nfds_t nfds = 0;
  if (wake_fd >= 0) fds[nfds++] = {wake_fd, POLLIN, 0};
  for (const RelayedStream& st : streams)
    if (st.fd >= 0) fds[nfds++] = {st.fd, POLLIN, 0};
  ::poll(fds, nfds, timeout_ms);
  for (RelayedStream& st : streams) relay_available(st.fd, *st.relay);
}

}  // namespace

bool reap_exited(pid_t child, int& status) {
  bool reaped = false;
  int st = 0;
  pid_t w;
  while ((w = waitpid(-1, &st, WNOHANG)) > 0)
    if (w == child) {
      status = st;
      reaped = true;
    }
  return reaped;
}

void write_shim_spec(const std::string& dir, const ShimSpec& s) {
  json env = json::array();
  for (const auto& [k, v] : s.env) env.push_back({k, v});
  json j{{"argv", s.argv}, {"env", env}, {"workdir", s.workdir}, {"user", s.user}, {"uid", s.uid},
         {"gid", s.gid}, {"stdout", s.stdout_path}, {"stderr", s.stderr_path}, {"grace_s", s.grace_s},
         {"cgroup_name", s.cgroup_name}, {"checkpoint_signal", s.checkpoint_signal}, {"umask", s.umask},
         {"max_log_bytes", s.max_log_bytes}};
  write_atomic(dir, "spec.json", j.dump() + "\n");
}

void write_launch_boot(const std::string& dir) {
  const std::string id = boot_id();
  if (id.empty()) throw std::runtime_error("cannot read /proc/sys/kernel/random/boot_id");
  write_atomic(dir, "boot", id + "\n");
}

std::optional<bool> launched_this_boot(const std::string& dir) {
  std::ifstream in(dir + "/boot");
  if (std::string recorded; in && std::getline(in, recorded)) {
    const std::string now = boot_id();
    if (now.empty()) return std::nullopt;
    return recorded == now;
  }
  struct stat st {};
  const auto booted = boot_time();
  if (::stat((dir + "/spec.json").c_str(), &st) != 0 || !booted) return std::nullopt;
  return static_cast<double>(st.st_mtim.tv_sec) >= *booted;
}

std::optional<ShimExit> read_shim_exit(const std::string& dir) {
  const std::string path = dir + "/exit.json";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw ShimExitUnreadable("open " + path + ": " + std::strerror(errno));
  }
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      throw ShimExitUnreadable("read " + path + ": " + std::strerror(e));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > (1u << 20)) {
      ::close(fd);
      throw std::runtime_error(path + " is larger than 1 MiB");
    }
  }
  ::close(fd);
  const json j = json::parse(text);
  ShimExit e;
  e.started = j.at("started").get<bool>();
  e.error = j.at("error").get<std::string>();
  e.start_time = j.at("start_time").get<double>();
  e.end_time = j.at("end_time").get<double>();
  if (!j.at("exit_code").is_null()) e.exit_code = j.at("exit_code").get<int>();
  if (!j.at("signal").is_null()) e.signal = j.at("signal").get<int>();
  e.cgroup = j.value("cgroup", std::string());
  if (j.contains("cpu_usec")) e.cpu_usec = j.at("cpu_usec").get<std::uint64_t>();
  if (j.contains("memory_peak_bytes")) e.memory_peak_bytes = j.at("memory_peak_bytes").get<std::uint64_t>();
  e.stdout_lost_bytes = j.value("stdout_lost_bytes", std::uint64_t{0});
  e.stderr_lost_bytes = j.value("stderr_lost_bytes", std::uint64_t{0});
  return e;
}

bool shim_started(const std::string& dir) { return ::access((dir + "/started").c_str(), F_OK) == 0; }

std::optional<double> shim_started_at(const std::string& dir) {
  struct stat st {};
  if (::stat((dir + "/started").c_str(), &st) != 0) return std::nullopt;
  return static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) / 1e9;
}

std::optional<std::string> shim_cgroup(const std::string& dir, const std::string& expected_name) {
  auto path = read_cgroup_record(dir + "/cgroup");
  if (!path || path->substr(path->rfind('/') + 1) != expected_name) return std::nullopt;
  return path;
}

int shim_main(const std::string& dir) {
  setsid();
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  sigset_t set;
  sigemptyset(&set);
  // SIGUSR1 is colod's checkpoint request (blocked: it must never kill the shim).
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGUSR1}) sigaddset(&set, sig);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // Keep only stdio and the "go" pipe: whatever else colod had open is not the shim's business.
  cloexec_from(4, /*close_now=*/true);
  {
    const int log = ::open((dir + "/shim.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull >= 0) dup2(devnull, 0);
    if (log >= 0) {
      dup2(log, 1);
      dup2(log, 2);
    }
  }
  ShimExit ex;
  auto finish = [&](const ShimExit& e) {
    try {
      write_exit(dir, e);
    } catch (const std::exception& err) {
      std::fprintf(stderr, "colo-shim: cannot write exit.json: %s\n", err.what());
      return 1;
    }
    return 0;
  };

  ShimSpec spec;
  try {
    std::ifstream in(dir + "/spec.json");
    std::stringstream ss;
    ss << in.rdbuf();
    spec = spec_from_json(json::parse(ss.str()));
  } catch (const std::exception& e) {
    ex.error = std::string("bad spec.json: ") + e.what();
    ex.end_time = wall_now();
    ::close(3);
    return finish(ex);
  }

  // 1. Wait for "go" (or EOF, or a cancel).
  for (;;) {
    pollfd p{3, POLLIN, 0};
    const int pr = ::poll(&p, 1, 100);
    if (pr > 0) {
      char c = 0;
      const ssize_t n = ::read(3, &c, 1);
      if (n == 1 && c == 'g') break;
      if (n < 0 && errno == EINTR) continue;
      ex.error = "colod went away before starting the job";
      ex.end_time = wall_now();
      return finish(ex);
    }
    timespec zero{0, 0};
    const int sig = sigtimedwait(&set, nullptr, &zero);
    if (sig == SIGTERM || sig == SIGINT) {
      ex.error = "cancelled before start";
      ex.end_time = wall_now();
      return finish(ex);
    }
  }
  ::close(3);

  // 2. Start the job, once exit.json has its room (else it is not started: colod may start it again).
  if (std::string why; !reserve_exit_room(dir, &why)) {
    ex.error = "cannot start the job: " + why;
    ex.end_time = wall_now();
    return finish(ex);
  }
  {
    const int fd = ::open((dir + "/started").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
  }
  ex.started = true;
  ex.start_time = wall_now();
  // The job's logs are its user's alone (and root's): 0600, owned by the submitter.
  const int out_fd = ::open(spec.stdout_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  const int err_fd = ::open(spec.stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (out_fd < 0 || err_fd < 0) {
    ex.error = std::string("cannot open the job's log files: ") + std::strerror(errno);
    ex.exit_code = 127;
    ex.end_time = wall_now();
    return finish(ex);
  }
  if (geteuid() == 0 && spec.uid >= 0) {
    [[maybe_unused]] int r1 = fchown(out_fd, static_cast<uid_t>(spec.uid), static_cast<gid_t>(spec.gid));
    [[maybe_unused]] int r2 = fchown(err_fd, static_cast<uid_t>(spec.uid), static_cast<gid_t>(spec.gid));
  }
  ::fchmod(out_fd, 0600);  // a log made by an older colod (0640) is tightened too
  ::fchmod(err_fd, 0600);
  // The job writes into pipes the shim relays to the files (log_relay.h): bounded per attempt.
  int report[2], out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if (pipe2(report, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    ex.error = std::string("pipe: ") + std::strerror(errno);
    ex.exit_code = 127;
    ex.end_time = wall_now();
    return finish(ex);
  }
  ::fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  ::fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
  // The pipes are the job's stdout and stderr: owned by its user, as its log files were, so that
  // it can open them again by name (/dev/stdout, `tee /dev/stderr`: a 0600 root pipe refused that).
  if (geteuid() == 0 && spec.uid >= 0) {
    [[maybe_unused]] int r1 = fchown(out_pipe[1], static_cast<uid_t>(spec.uid), static_cast<gid_t>(spec.gid));
    [[maybe_unused]] int r2 = fchown(err_pipe[1], static_cast<uid_t>(spec.uid), static_cast<gid_t>(spec.gid));
  }
  const std::string cap_text = fmt::format("jobs.max_log = {} MiB", spec.max_log_bytes >> 20);
  const std::size_t tail = static_cast<std::size_t>(std::min<std::uint64_t>(spec.max_log_bytes, kLogTailBytes));
  LogRelay out_relay(out_fd, spec.max_log_bytes, tail, "stdout", cap_text);
  LogRelay err_relay(err_fd, spec.max_log_bytes, tail, "stderr", cap_text);
  RelayedStream streams[2] = {{out_pipe[0], &out_relay}, {err_pipe[0], &err_relay}};
  std::string cgroup, cgroup_procs;
  if (!spec.cgroup_name.empty()) {
    std::string why;
    // The shim's pid makes the name unique on this host (job ids are per colod state directory).
    if (auto p = create_job_cgroup(spec.cgroup_name + "-" + std::to_string(getpid()), &why)) {
      cgroup = *p;
      cgroup_procs = cgroup + "/cgroup.procs";
      // Where colod finds the job's cgroup if this shim is killed: what the job detached is in it
      // and must die before the job runs again (never two copies).
      try {
        write_atomic(dir, "cgroup", cgroup + "\n");
      } catch (const std::exception& e) {  // unrecorded, the leaf would not be found again: not used
        std::fprintf(stderr, "colo-shim: no cgroup for the job (cannot record it: %s): process-tree containment only\n",
                     e.what());
        remove_cgroup(cgroup);
        cgroup.clear();
        cgroup_procs.clear();
      }
    } else {
      std::fprintf(stderr, "colo-shim: no cgroup for the job (%s): process-tree containment only\n", why.c_str());
    }
  }
  const pid_t child = fork();
  if (child == 0) {
    ::close(report[0]);
    exec_job(spec, out_pipe[1], err_pipe[1], report[1], cgroup_procs.c_str());
  }
  ::close(report[1]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (child < 0) {
    ex.error = std::string("fork: ") + std::strerror(errno);
    ex.exit_code = 127;
    ex.end_time = wall_now();
    return finish(ex);
  }
  setpgid(child, child);  // also done in the child; whichever runs first wins the race
  {
    std::string msg;
    char buf[512];
    ssize_t n;
    while ((n = ::read(report[0], buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
      if (n > 0) msg.append(buf, static_cast<size_t>(n));
    ::close(report[0]);
    if (!msg.empty()) ex.error = msg;
  }

  // 3. Wait, forwarding a cancel and relaying the output. The signals stay blocked; a signalfd
  // only wakes the poll (sigtimedwait takes them), so none waits behind a quiet job.
  const int sig_fd = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  std::optional<double> kill_at;
  int status = 0;
  for (;;) {
    if (reap_exited(child, status)) break;
    relay_when_ready(streams, sig_fd, 200);
    timespec zero{0, 0};
    for (int sig; (sig = sigtimedwait(&set, nullptr, &zero)) > 0;) {
      if (sig == SIGUSR1 && spec.checkpoint_signal > 0) ::kill(-child, spec.checkpoint_signal);
      if ((sig == SIGTERM || sig == SIGINT) && !kill_at) {
        ::kill(-child, SIGTERM);
        kill_at = mono_now() + spec.grace_s;
      }
    }
    if (kill_at && mono_now() >= *kill_at) {
      ::kill(-child, SIGKILL);
      kill_at = mono_now() + 3600;  // once
    }
  }
  if (sig_fd >= 0) ::close(sig_fd);
  if (WIFEXITED(status)) ex.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) ex.signal = WTERMSIG(status);

  // 4. Nothing of the job may outlive it (it could hold GPU memory the ledger no longer counts):
  // its process group, its session, and whatever it detached (re-parented to this subreaper).
  ::kill(-child, SIGKILL);
  kill_session(getsid(0));
  if (!cgroup.empty() && !kill_cgroup(cgroup, 30))
    std::fprintf(stderr, "colo-shim: processes in %s survive SIGKILL\n", cgroup.c_str());
  kill_every_descendant(30);
  // What is still in the pipes: every writer is dead now (one that survived SIGKILL could hold a
  // pipe open, hence the bound), then the kept tails.
  const double drain_until = mono_now() + 5;
  for (double left; any_open(streams) && (left = drain_until - mono_now()) > 0;)
    relay_when_ready(streams, -1, static_cast<int>(left * 1000) + 1);
  for (RelayedStream& st : streams) {
    if (st.fd >= 0) {
      std::fprintf(stderr, "colo-shim: a process of the job still holds its output open: what it writes is lost\n");
      ::close(st.fd);
    }
    st.relay->finish();
  }
  ex.stdout_lost_bytes = out_relay.lost();
  ex.stderr_lost_bytes = err_relay.lost();
  ::close(out_fd);
  ::close(err_fd);
  if (!cgroup.empty()) {
    const CgroupUsage u = read_cgroup_usage(cgroup);
    ex.cgroup = cgroup;
    ex.cpu_usec = u.cpu_usec;
    ex.memory_peak_bytes = u.memory_peak_bytes;
    if (!remove_cgroup(cgroup)) std::fprintf(stderr, "colo-shim: rmdir %s: %s\n", cgroup.c_str(), std::strerror(errno));
  }
  ex.end_time = wall_now();
  return finish(ex);
}

}  // namespace colo::daemon
