#include "daemon/proc.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace colo::daemon {

std::optional<ProcStat> read_proc_stat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
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

bool process_alive(pid_t pid, std::uint64_t start_ticks) {
  if (pid <= 0) return false;
  auto st = read_proc_stat(pid);
  return st && st->state != 'Z' && st->state != 'X' && st->start_ticks == start_ticks;
}

std::vector<pid_t> processes_in_session(pid_t sid) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (!end || *end != '\0' || pid <= 0) continue;
    auto st = read_proc_stat(static_cast<pid_t>(pid));
    if (st && st->session == sid && st->state != 'Z') out.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return out;
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
