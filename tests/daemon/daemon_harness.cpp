#include "daemon_harness.h"

#include "daemon/job_cgroup.h"
#include "estimate/trace/probe_runner.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

namespace colo::daemon::testing {

std::string binary(const std::string& name) { return std::string(COLO_BINARY_DIR) + "/" + name; }

TempDir::TempDir() {
  char tmpl[] = "/tmp/colod-test-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
  ::chmod(path_.c_str(), 0755);  // other test users must reach the socket
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

MountedTmpfs::MountedTmpfs(std::string path, const std::string& size) : path_(std::move(path)) {
  std::error_code ec;
  std::filesystem::create_directories(path_, ec);
  if (::mount("colo-test", path_.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0)
    mounted_ = true;
  else
    error_ = std::string("cannot mount a tmpfs (needs root, as CI runs): ") + std::strerror(errno);
}

MountedTmpfs::~MountedTmpfs() {
  if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
}

std::uintmax_t fill_disk(const std::string& file) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("open " + file + ": " + std::strerror(errno));
  const std::string chunk(64 << 10, 'f');
  std::uintmax_t total = 0;
  for (std::size_t size = chunk.size();;) {
    const ssize_t n = ::write(fd, chunk.data(), size);
    if (n > 0) {
      total += static_cast<std::uintmax_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == ENOSPC && size > 1) {
      size = 1;  // the last partial block too, a byte at a time
      continue;
    }
    const int err = n < 0 ? errno : EIO;
    ::close(fd);
    if (err != ENOSPC) throw std::runtime_error("write " + file + ": " + std::strerror(err));
    return total;
  }
}

std::string MountedTmpfs::unmount() {
  if (!mounted_) return "not mounted";
  if (::umount2(path_.c_str(), 0) != 0) return std::strerror(errno);
  mounted_ = false;
  return "";
}

RunResult run_process(const std::vector<std::string>& argv, std::optional<uid_t> as_uid, std::optional<gid_t> as_gid) {
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) throw std::runtime_error("pipe");
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]);
    close(err[0]);
    close(out[1]);
    close(err[1]);
    if (as_gid && setgid(*as_gid) != 0) _exit(126);
    if (as_uid) {
      if (setgroups(0, nullptr) != 0 && errno != EPERM) _exit(126);
      if (setuid(*as_uid) != 0) _exit(126);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  RunResult r;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP))) continue;
      const ssize_t n = read(fds[k].fd, buf, sizeof(buf));
      if (n <= 0) {
        close(fds[k].fd);
        fds[k].fd = -1;
        --open_fds;
      } else {
        (k == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string fifo_gate(const std::string& path) {
  if (::mkfifo(path.c_str(), 0666) != 0 && errno != EEXIST)
    throw std::runtime_error("mkfifo " + path + ": " + std::strerror(errno));
  ::chmod(path.c_str(), 0666);
  return "read _gate < " + path;
}

void open_gate(const std::string& path) { std::ofstream(path) << "go\n"; }

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout, std::chrono::milliseconds step) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(step);
  }
  return pred();
}

ColodProcess::ColodProcess(std::string state_dir, std::string fake_gpus, std::vector<std::string> extra,
                           std::string log_file)
    : dir_(std::move(state_dir)), fake_(std::move(fake_gpus)), log_file_(std::move(log_file)), extra_(std::move(extra)) {
  if (log_file_.empty()) log_file_ = dir_ + "/colod.log";
  start();
}

ColodProcess::~ColodProcess() {
  if (pid_ > 0) stop();
}

bool ColodProcess::start(bool may_exit) {
  ++generation_;
  const std::string& logfile = log_file_;
  std::vector<std::string> argv{binary("colod"), "--fake-gpus", fake_, "--state-dir", dir_};
  argv.insert(argv.end(), extra_.begin(), extra_.end());
  pid_ = fork();
  if (pid_ == 0) {
    const int fd = open(logfile.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    for (const auto& [k, v] : env_) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  // Ready when the API answers.
  const bool up = wait_until(
      [&] {
        if (!alive()) return true;
        return run_process({binary("colo"), "--socket", socket(), "gpus", "--json"}).rc == 0;
      },
      std::chrono::seconds(60), std::chrono::milliseconds(100));
  if (up && !alive() && may_exit) return false;
  if (!up || !alive()) throw std::runtime_error("colod did not come up:\n" + log());
  return true;
}

bool ColodProcess::alive() {
  if (pid_ <= 0) return false;
  int status = 0;
  const pid_t w = waitpid(pid_, &status, WNOHANG);
  if (w == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

bool ColodProcess::wait_exit(std::chrono::seconds timeout) {
  return wait_until([&] { return !alive(); }, timeout, std::chrono::milliseconds(50));
}

void ColodProcess::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void ColodProcess::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::string ColodProcess::log() const {
  std::ifstream in(log_file_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

RunResult ColodProcess::colo(const std::vector<std::string>& args, std::optional<uid_t> uid) const {
  std::vector<std::string> argv{binary("colo"), "--socket", socket()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, uid, uid ? std::optional<gid_t>(*uid) : std::nullopt);
}

nlohmann::json ColodProcess::colo_json(const std::vector<std::string>& args) const {
  RunResult r = colo(args);
  if (r.rc != 0) throw std::runtime_error("colo failed (" + std::to_string(r.rc) + "): " + r.err);
  return nlohmann::json::parse(r.out);
}

std::uint64_t ColodProcess::submit(const std::vector<std::string>& args) const {
  std::vector<std::string> a{"submit"};
  a.insert(a.end(), args.begin(), args.end());
  RunResult r = colo(a);
  if (r.rc != 0) throw std::runtime_error("colo submit failed: " + r.err);
  return std::stoull(r.out);
}

nlohmann::json ColodProcess::wait_terminal(std::uint64_t id, std::chrono::seconds timeout) const {
  nlohmann::json j;
  wait_until(
      [&] {
        j = colo_json({"show", std::to_string(id), "--json"});
        const std::string s = j.at("state");
        return s == "done" || s == "failed" || s == "cancelled";
      },
      timeout, std::chrono::milliseconds(200));
  return j;
}

nlohmann::json show_job(const ColodProcess& d, std::uint64_t id) {
  return d.colo_json({"show", std::to_string(id), "--json"});
}

bool has_event(const nlohmann::json& job, const std::string& kind) {
  for (const nlohmann::json& e : job.at("events"))
    if (e.at("kind") == kind) return true;
  return false;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string http_post(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string cannot_probe_as_nobody() {
  if (::geteuid() != 0) return "needs root to submit as another user";
  const std::string pkg = estimate::probe_package_dir() + "/colo_probe/__main__.py";
  if (run_process({"/usr/bin/test", "-r", pkg}, 65534, 65534).rc != 0)
    return pkg + " is not readable by nobody (uid 65534)";
  return "";
}

std::string no_cgroups_here() {
  std::string why;
  const auto probe = create_job_cgroup("colo-test-probe-" + std::to_string(getpid()), &why);
  if (!probe) return why.empty() ? "unknown" : why;
  remove_cgroup(*probe);
  return {};
}

}  // namespace colo::daemon::testing
