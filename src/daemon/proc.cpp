#include "daemon/proc.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>

namespace colo::daemon {

namespace {

// Calls f(pid, stat) for every readable /proc/<pid>/stat.
template <class F>
void for_each_process(F f) {
  DIR* d = opendir("/proc");
  if (!d) return;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (!end || *end != '\0' || pid <= 0) continue;
    if (auto st = read_proc_stat(static_cast<pid_t>(pid))) f(static_cast<pid_t>(pid), *st);
  }
  closedir(d);
}

}  // namespace

std::optional<ProcStat> read_proc_stat(pid_t pid, int* err) {
  if (err) *err = 0;
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (err) *err = errno;
    return std::nullopt;
  }
  char buf[1024];
  ssize_t n;
  do {
    n = ::read(fd, buf, sizeof(buf) - 1);
  } while (n < 0 && errno == EINTR);
  const int read_err = errno;
  ::close(fd);
  if (n < 0) {
    if (err) *err = read_err;
    return std::nullopt;
  }
  const std::string line(buf, static_cast<size_t>(n));
  // comm (field 2) may contain spaces and parentheses: parse after the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return std::nullopt;
  std::istringstream rest(line.substr(close + 2));
  ProcStat st;
  std::string field;
  // field 3 state, 4 ppid, 5 pgrp, 6 session, …, 22 starttime
  rest >> st.state >> st.ppid >> st.pgrp >> st.session;
  for (int f = 7; f < 22; ++f) rest >> field;
  rest >> st.start_ticks;
  if (!rest) return std::nullopt;
  return st;
}

Liveness process_liveness(pid_t pid, std::uint64_t start_ticks) {
  if (pid <= 0) return Liveness::Gone;
  int err = 0;
  if (auto st = read_proc_stat(pid, &err)) {
    if (st->state == 'Z' || st->state == 'X' || st->start_ticks != start_ticks) return Liveness::Gone;
    return Liveness::Alive;
  }
  // The kernel's own word: kill(pid, 0) fails with ESRCH only when no such process exists.
  if ((err == ENOENT || err == ESRCH) && ::kill(pid, 0) != 0 && errno == ESRCH) return Liveness::Gone;
  return Liveness::Unknown;
}

bool process_alive(pid_t pid, std::uint64_t start_ticks) {
  return process_liveness(pid, start_ticks) == Liveness::Alive;
}

std::vector<pid_t> processes_in_session(pid_t sid) {
  std::vector<pid_t> out;
  for_each_process([&](pid_t pid, const ProcStat& st) {
    if (st.session == sid && st.state != 'Z') out.push_back(pid);
  });
  return out;
}

std::vector<pid_t> descendants_of(pid_t root) {
  std::map<pid_t, pid_t> parent;  // live processes only
  for_each_process([&](pid_t pid, const ProcStat& st) {
    if (st.state != 'Z') parent[pid] = st.ppid;
  });
  std::vector<pid_t> out;
  for (const auto& [pid, ppid] : parent) {
    // Walk up at most as many steps as there are processes (a cycle cannot exist, but a racing
    // read could show one).
    pid_t p = ppid;
    for (size_t steps = 0; p > 1 && steps <= parent.size(); ++steps) {
      if (p == root) {
        out.push_back(pid);
        break;
      }
      auto it = parent.find(p);
      if (it == parent.end()) break;
      p = it->second;
    }
    if (p == root && (out.empty() || out.back() != pid)) out.push_back(pid);
  }
  return out;
}

bool session_still_led_by(pid_t sid, std::uint64_t start_ticks) {
  const auto st = read_proc_stat(sid);
  return !st || st->start_ticks == start_ticks;
}

std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!in || !std::getline(in, id)) return {};
  return id;
}

std::optional<double> boot_time() {
  std::ifstream in("/proc/stat");
  std::string key;
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    double t = 0;
    if (l >> key >> t && key == "btime") return t;
  }
  return std::nullopt;
}

int kill_session(pid_t sid) {
  int n = 0;
  for (pid_t p : processes_in_session(sid)) {
    if (p == getpid()) continue;
    if (::kill(p, SIGKILL) == 0) ++n;
  }
  return n;
}

}  // namespace colo::daemon
