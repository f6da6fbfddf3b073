#pragma once
// The fake NVML's shared state directory (COLO_FAKE_NVML_DIR). Fake jobs register what they
// "allocated" here; the fake library reads it, so per-process accounting is real across
// processes:
//   DIR/gpus.spec        the GPU spec (written by configure_fake_nvml_env)
//   DIR/lock             flock()ed while a job checks-and-allocates (no double booking)
//   DIR/procs/<pid>      one record per process, replaced atomically (write + rename)
//   DIR/accounting/<pid> the most each process held per device, kept after it exits (NVML's
//                        accounting mode); written with every record
//   DIR/fail-<index>     error injection: calls about GPU <index> fail while it exists
//   DIR/energy-<index>   the GPU's energy counter
// A record whose process is gone (or is a zombie, or whose pid was reused — the start time
// differs) is dead: it is ignored and removed, so killed jobs never leak fake memory.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/units.h"

namespace colo::gpu::fake {

struct Allocation {
  std::string uuid;           // GPU-… or MIG-… the memory lives on
  MiB mib = 0;
  double sm_activity = 0;     // declared SMACT contribution, 0..1
  double sm_occupancy = 0;    // declared SMOCC contribution, 0..1
};

struct ProcessRecord {
  int pid = 0;
  std::uint64_t start_time = 0;  // /proc/<pid>/stat field 22 (clock ticks since boot)
  std::vector<Allocation> allocations;
};

// Start time of a running (non-zombie) process, nullopt if it does not exist or has exited.
std::optional<std::uint64_t> process_start_time(int pid);

class StateDir {
 public:
  explicit StateDir(std::string dir);
  const std::string& path() const { return dir_; }

  // Exclusive lock on DIR/lock for the lifetime of the object.
  class Lock {
   public:
    explicit Lock(const std::string& dir);
    ~Lock();
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    int fd_ = -1;
  };

  // Records of live processes. Dead records are removed (under the lock, unless the caller
  // says it already holds it).
  std::vector<ProcessRecord> live_processes(bool lock_held = false) const;

  void write_record(const ProcessRecord& r) const;  // atomic replace; raises the accounting peaks
  // The most process `pid` (started at `start_time`, 0 = any) held on `uuid`, if recorded.
  std::optional<MiB> accounting_peak(int pid, const std::string& uuid) const;
  void remove_record(int pid) const;

  // Error injection: the NVML return code `call` on GPU `index` must fail with, if any.
  // DIR/fail-<index> holds lines "CODE" (every call) or "CODE nvmlFunctionName" (that call
  // only); an empty file means 15 (NVML_ERROR_GPU_IS_LOST) for every call.
  std::optional<int> injected_failure(int index, const std::string& call) const;

  // Content of DIR/gpus.spec, or empty when there is none.
  std::string stored_spec() const;

 private:
  std::string dir_;
};

}  // namespace colo::gpu::fake
