#pragma once
// What /proc tells colod about processes: a pid plus its start time (field 22 of
// /proc/<pid>/stat, clock ticks since boot) names one process for good, even after the pid is
// reused — that is how a restarted daemon re-adopts the shims of running jobs.
#include <cstdint>
#include <optional>
#include <sys/types.h>
#include <vector>

namespace colo::daemon {

struct ProcStat {
  char state = '?';  // R, S, D, Z, …
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t session = 0;
  std::uint64_t start_ticks = 0;
};

std::optional<ProcStat> read_proc_stat(pid_t pid);
// Alive (not a zombie) and started at `start_ticks`.
bool process_alive(pid_t pid, std::uint64_t start_ticks);
// Every live process whose session id is `sid`.
std::vector<pid_t> processes_in_session(pid_t sid);
// SIGKILLs every process of the session except the caller; returns how many were signalled.
int kill_session(pid_t sid);

}  // namespace colo::daemon
