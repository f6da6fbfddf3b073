#pragma once
// The energy no schedule can go below, from the power model (models/power_model.h):
//
//   E = idle × N × T + (busy − idle) × B + (max − busy) × W
//
// over a makespan T, B busy GPU-seconds and W seconds of SM work. W = Σ gpus × SMACT × solo of
// the jobs that complete (a job's dynamic energy does not depend on where it runs: the model's
// premise, measured on an H200), B ≥ the packing programme's GPU-seconds (and ≥ W: at most one
// second of SM work per busy second), T ≥ the makespan bound. With idle ≤ busy ≤ max every
// coefficient is non-negative, so the bounds give the bound; otherwise there is none.
#include <optional>

#include "core/units.h"
#include "sim/models/power_model.h"

namespace colo::sim {

// Joules.
std::optional<double> energy_lower_bound(const PowerParams& power, int gpus, Seconds makespan_bound_s,
                                         double busy_gpu_seconds_bound, double work_gpu_seconds);

}  // namespace colo::sim
