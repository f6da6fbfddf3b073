#include "daemon/job_cgroup.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace colo::daemon {

namespace {

double mono() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The cgroup2 mount point from /proc/self/mountinfo (field 5 = mount point, after " - " the
// file-system type).
std::optional<std::string> cgroup2_mount() {
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream f(line.substr(0, dash));
    std::string id, parent, dev, root, mount;
    if (f >> id >> parent >> dev >> root >> mount) return mount;
  }
  return std::nullopt;
}

// Our own cgroup v2 path ("0::/some/path" in /proc/self/cgroup).
std::optional<std::string> own_cgroup() {
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  return std::nullopt;
}

bool write_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

std::vector<pid_t> members(const std::string& path) {
  std::vector<pid_t> out;
  std::ifstream in(path + "/cgroup.procs");
  for (long p; in >> p;) out.push_back(static_cast<pid_t>(p));
  return out;
}

}  // namespace

std::optional<std::string> create_job_cgroup(const std::string& name, std::string* why) {
  const auto mount = cgroup2_mount();
  if (!mount) {
    if (why) *why = "no cgroup2 hierarchy mounted";
    return std::nullopt;
  }
  const auto own = own_cgroup();
  if (!own) {
    if (why) *why = "not in a cgroup2 hierarchy";
    return std::nullopt;
  }
  const std::string path = *mount + (*own == "/" ? "" : *own) + "/" + name;
  // Never join an existing cgroup: it would be another job's (another colod on this host, or a
  // leftover), and killing ours would kill it.
  if (::mkdir(path.c_str(), 0755) != 0) {
    if (why) *why = "mkdir " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  if (::access((path + "/cgroup.procs").c_str(), W_OK) != 0) {
    if (why) *why = path + "/cgroup.procs is not writable";
    ::rmdir(path.c_str());
    return std::nullopt;
  }
  return path;
}

bool kill_cgroup(const std::string& path, double limit_s) {
  const bool has_kill = ::access((path + "/cgroup.kill").c_str(), W_OK) == 0;
  const double give_up = mono() + limit_s;
  for (;;) {
    const std::vector<pid_t> left = members(path);
    if (left.empty()) return true;
    if (has_kill) write_file(path + "/cgroup.kill", "1");
    else
      for (pid_t p : left) ::kill(p, SIGKILL);
    if (mono() >= give_up) return false;
    usleep(10000);
  }
}

CgroupUsage read_cgroup_usage(const std::string& path) {
  CgroupUsage u;
  std::ifstream cpu(path + "/cpu.stat");
  for (std::string key; cpu >> key;) {
    std::uint64_t v = 0;
    if (!(cpu >> v)) break;
    if (key == "usage_usec") u.cpu_usec = v;
  }
  std::ifstream mem(path + "/memory.peak");
  if (std::uint64_t v = 0; mem >> v) u.memory_peak_bytes = v;
  return u;
}

std::optional<std::string> read_cgroup_record(const std::string& file) {
  std::ifstream in(file);
  std::string path;
  if (!in || !std::getline(in, path)) return std::nullopt;
  if (path.rfind("/sys/fs/cgroup/", 0) != 0 || path.find("/../") != std::string::npos) return std::nullopt;
  return path;
}

bool remove_cgroup(const std::string& path) { return ::rmdir(path.c_str()) == 0; }

}  // namespace colo::daemon
