#pragma once
// What a simulation did over time, for `colo sim --report`: every attempt of every job (when,
// where, how it ended, whether it shared a GPU) and the per-GPU memory, SM activity and queue
// length after each batch of events (a step function: a value holds until the next point).
// Recording is optional (SimConfig::timeline); without it the simulator keeps nothing extra.
#include <cstddef>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/units.h"

namespace colo::sim {

struct AttemptSpan {
  JobId job = 0;
  int attempt = 1;          // 1-based launch number
  std::vector<int> gpus;
  Seconds start = 0;
  Seconds end = -1;         // −1: still running when the simulation ended (never, in a full run)
  std::string state;        // "done", "recovered" (done after an OOM), "oom" (this attempt crashed)
  bool collocated = false;  // another job ran on one of its GPUs at some point of this attempt
};

struct TimelinePoint {
  Seconds t = 0;
  std::vector<MiB> used_mib;   // true memory in use, per GPU
  std::vector<double> smact;   // SM activity, per GPU
  std::size_t queue = 0;       // jobs waiting (main + recovery queue)
};

struct SimTimeline {
  std::vector<AttemptSpan> attempts;
  std::vector<TimelinePoint> points;
};

}  // namespace colo::sim
