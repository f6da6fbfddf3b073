#pragma once
// The scheduler core: given the queues, the GPUs' state and the reservation ledger, decide which
// jobs go where. Pure: no I/O, no clock (the caller passes `now`), deterministic. The daemon and
// the simulator both drive this one implementation.
//
// Order of service: the recovery queue first, then the main queue, each FIFO. A queue's head
// that cannot be placed blocks everything behind it (the thesis' FIFO); a recovery head that
// waits also blocks the main queue, so that GPUs drain and the crashed job gets its idle GPU.
// With backfilling (SchedulerConfig::backfill), jobs behind a waiting main-queue head may start
// where they fit, but the head may be overtaken at most `max_overtakes` times; after that the
// queue is FIFO again until the head starts, so it cannot starve.
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/backfill.h"
#include "core/gpu.h"
#include "core/job.h"
#include "core/ledger.h"
#include "core/policy/policies.h"
#include "core/recovery.h"

namespace colo {

struct SchedulerConfig {
  SchedulerConfig() = default;
  SchedulerConfig(Policy p, RecoveryConfig r = {}, Backfill b = {})
      : policy(std::move(p)), recovery(r), backfill(b) {}
  Policy policy = make_policy(PolicyKind::Magm);
  RecoveryConfig recovery;
  Backfill backfill;
};

struct SchedulerState {
  int rr_next = 0;  // round-robin cursor (position in the snapshot list)
  // The main-queue head that waits and how many jobs have started ahead of it (backfilling).
  std::optional<JobId> waiting_head;
  int overtakes = 0;
};

struct SchedulerInput {
  std::span<const Job> recovery_queue;  // FIFO order, state recovering
  std::span<const Job> main_queue;      // FIFO order, state queued
  std::span<const GpuSnapshot> gpus;
  const Ledger* ledger = nullptr;
  Seconds now = 0;
  // Fill Decision::blocked with why the blocking head was not placed (a few formatted
  // strings per call; the simulator leaves it off).
  bool explain = false;
};

struct Placement {
  JobId job = 0;
  std::vector<int> gpu_indices;  // GpuSnapshot::index of each chosen GPU, job.gpus of them
  MiB reserve_mib = 0;           // per GPU, what the ledger should hold for it
  bool alone = false;            // must run alone on those GPUs (the ledger holds them for it)
  bool recovery = false;
  std::optional<JobId> overtook;  // backfilled: started ahead of this waiting head
};

// A job no GPU set could ever hold (more GPUs than exist); the caller fails it.
struct Rejection {
  JobId job = 0;
  std::string reason;
};

// The queue head that could not be placed, and why. Every job behind it (in its queue, and the
// whole main queue behind a recovery head) waits because of FIFO order.
struct Blocked {
  JobId job = 0;
  bool recovery = false;  // the head of the recovery queue
  // e.g. "needs 12.0 GiB + 2.0 GiB margin; most free is 8.0 GiB on GPU 1",
  // "recovery: waits for an idle GPU: GPU 0 runs job(s) 3", "GPU 0 drained, GPU 1 unhealthy".
  std::string reason;
};

struct Decision {
  std::vector<Placement> placements;
  std::vector<Rejection> rejections;
  std::optional<Blocked> blocked;  // set when a head waits (its reason only with `explain`)
};

class Scheduler {
 public:
  explicit Scheduler(SchedulerConfig cfg);
  const SchedulerConfig& config() const { return cfg_; }
  Decision decide(const SchedulerInput& in, SchedulerState& state) const;

 private:
  SchedulerConfig cfg_;
};

}  // namespace colo
