#pragma once
// A cgroup v2 leaf per attempt, where the host allows it: the job's main process joins it
// before exec, so everything the job starts — even a process that leaves the shim's process
// tree — is in it and is killed with it (cgroup.kill), and its CPU time (and memory peak when
// the memory controller is enabled there) is accounted. The leaf is created under the shim's
// own cgroup on the cgroup2 mount (/sys/fs/cgroup, or /sys/fs/cgroup/unified on hybrid hosts).
// Without a writable cgroup2 hierarchy (no delegation, cgroup v1 only, not root) there is no
// leaf and containment is the shim's process tree alone.
#include <cstdint>
#include <optional>
#include <string>

#include "common/join_cgroup.h"  // the forked child joins its leaf before exec

namespace colo::daemon {

// Creates the leaf `name` (e.g. "colo-job-12-1-4711": job, attempt, shim pid); nullopt with
// `why` when the host does not allow it or the name exists already (never joins another's).
std::optional<std::string> create_job_cgroup(const std::string& name, std::string* why);


// Kills every process in the cgroup (cgroup.kill where the kernel has it, else SIGKILL to each
// pid listed in cgroup.procs) and waits until it is empty or `limit_s` passed. True when empty.
bool kill_cgroup(const std::string& path, double limit_s);

struct CgroupUsage {
  std::optional<std::uint64_t> cpu_usec;           // cpu.stat usage_usec
  std::optional<std::uint64_t> memory_peak_bytes;  // memory.peak (memory controller only)
};
CgroupUsage read_cgroup_usage(const std::string& path);

// The cgroup path recorded in `file` (by colod or a shim, for a later colod to find the leaf
// again), when it is one: under /sys/fs/cgroup, no "..". Callers check the leaf's name.
std::optional<std::string> read_cgroup_record(const std::string& file);

// rmdir; the cgroup must be empty.
bool remove_cgroup(const std::string& path);

}  // namespace colo::daemon
