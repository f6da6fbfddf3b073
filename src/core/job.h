#pragma once
// A training job as the scheduler core sees it, and its life-cycle state machine:
//
//   estimating ─► queued ─► placed ─► running ─► done | failed | oom ─► recovering ─► placed ─► …
//      │            │        │          │                                  │
//      └────────────┴────────┴──────────┴───────────► cancelled ◄──────────┘
//
// estimating: colod is probing the job's training step for its memory need (colo submit --probe);
// the job leaves it for queued whether the probe answered or not (a failed probe falls back).
// placed ─► queued is allowed too: a launch that fails before the process starts puts the
// job back where it was without counting an attempt against it. running ─► queued: a job
// whose time slot ended checkpointed and waits to resume (core/time_slots.h). queued/recovering ─► failed is
// for jobs the scheduler rejects (no GPU set could ever hold them).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"

namespace colo {

enum class JobState { Queued, Placed, Running, Done, Failed, Oom, Recovering, Cancelled, Estimating };

std::string_view to_string(JobState s);
std::optional<JobState> job_state_from_string(std::string_view s);
bool is_terminal(JobState s);
// Whether the state machine above has the edge from -> to.
bool can_transition(JobState from, JobState to);

// Per-GPU memory need: a value and the estimator that produced it, or unknown.
struct MemoryNeed {
  std::optional<MiB> mib;
  std::string source;  // "oracle", "horus", "allocsim", "history", "user", … ; empty if unknown

  static MemoryNeed unknown() { return {}; }
  static MemoryNeed of(MiB v, std::string src) { return {v, std::move(src)}; }
  bool known() const { return mib.has_value(); }
};

struct Job {
  JobId id = 0;
  std::string user;
  std::string command;
  int gpus = 1;  // distinct GPUs of this server, all placed at once
  MemoryNeed need;
  // Predicted solo SM activity (0..1) when something predicts it (the simulator's workload
  // model, an activity estimate); read by the smact_predicted filter.
  std::optional<double> solo_smact;
  Seconds submit_time = 0;
  int attempts = 0;  // launches so far
  JobState state = JobState::Queued;
  // Recovery bookkeeping (set by the recovery rules after an OOM crash):
  std::optional<MiB> recovery_need_mib;  // loose recovery: the need this retry asks for
  bool recovery_alone = false;       // strict recovery, or loose escalated to an idle GPU
  // It checkpoints on request: time slots apply to it (core/time_slots.h).
  bool checkpoint = false;
};

// Moves job to `to`, throwing std::logic_error if the state machine has no such edge.
void transition(Job& job, JobState to);

}  // namespace colo
