#pragma once
// What /proc tells colod about processes: a pid plus its start time (field 22 of
// /proc/<pid>/stat, clock ticks since boot) names one process for good, even after the pid is
// reused — that is how a restarted daemon re-adopts the shims of running jobs.
//
// A process is declared gone only on positive evidence (the kernel says there is no such pid,
// or the pid now names a zombie or another process). A read that fails for any other reason —
// out of descriptors, /proc not mounted — proves nothing: the answer is Unknown and the caller
// asks again later. Declaring a running job lost on a failed read would run it twice.
#include <cstdint>
#include <optional>
#include <string>
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

// nullopt when the file cannot be read or parsed; `err` (if given) gets the errno of a failed
// open/read, 0 for a parse failure.
std::optional<ProcStat> read_proc_stat(pid_t pid, int* err = nullptr);

enum class Liveness { Alive, Gone, Unknown };
// Alive: not a zombie and started at `start_ticks`. Gone: proven (no such pid, a zombie, or a
// different start time). Unknown: could not tell.
Liveness process_liveness(pid_t pid, std::uint64_t start_ticks);
// Alive (not a zombie) and started at `start_ticks`.
bool process_alive(pid_t pid, std::uint64_t start_ticks);
// Every live process whose session id is `sid`.
std::vector<pid_t> processes_in_session(pid_t sid);
// Every live process below `root` in the parent tree (children, grandchildren, …).
std::vector<pid_t> descendants_of(pid_t root);
// SIGKILLs every process of the session except the caller; returns how many were signalled.
int kill_session(pid_t sid);
// Whether session `sid`, led by the process that started at `start_ticks`, can still be that
// one's: the kernel keeps a session's number from any new process while a member remains, so
// it is, unless pid `sid` now names another process (the session emptied and the number went
// to a newcomer, whose session then is not the one meant). Same boot only: see boot_id().
bool session_still_led_by(pid_t sid, std::uint64_t start_ticks);

// This boot's identity (/proc/sys/kernel/random/boot_id); "" when it cannot be read. Pids and
// start times mean nothing across a reboot: a recorded pid may name any process of the new boot.
std::string boot_id();
// When this boot began (btime of /proc/stat, wall-clock seconds); nullopt when unreadable.
std::optional<double> boot_time();

}  // namespace colo::daemon
