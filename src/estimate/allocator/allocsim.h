#pragma once
// allocsim: model graph -> synthesised allocation sequence of training iterations
// (training_trace.h) -> replay through the caching-allocator model (caching_allocator.h) ->
// peak reserved bytes; plus the profile's CUDA context overhead = what nvidia-smi shows.
#include <cstdint>
#include <vector>

#include "estimate/allocator/caching_allocator.h"
#include "estimate/calibration/calibration_profile.h"
#include "estimate/graph/model_graph.h"
#include "estimate/optimizer.h"
#include "estimate/allocator/training_trace.h"

namespace colo::estimate {

struct ReplayResult {
  std::uint64_t reserved_peak = 0;
  std::uint64_t allocated_peak = 0;
  std::uint64_t events = 0;
  bool out_of_memory = false;  // the replay hit the device capacity
};

// Replays a trace through a fresh allocator. capacity = bytes the allocator may reserve; settings =
// the job's PYTORCH_CUDA_ALLOC_CONF (default: PyTorch's defaults).
ReplayResult replay(const std::vector<AllocEvent>& trace,
                    std::uint64_t capacity = std::numeric_limits<std::uint64_t>::max(),
                    const AllocatorSettings& settings = {});

struct AllocSimBreakdown {
  ReplayResult replay;
  double context_mib = 0;  // context (+ cuDNN's when the model has convs or batch norms)
  double margin = 0;       // the profile's safety margin
  double total_mib = 0;    // reserved peak in MiB * (1 + margin) + context
};

// The simulation behind the allocsim estimator, with an explicit profile (used by calibration).
AllocSimBreakdown simulate_allocsim(const ModelGraph& g, std::int64_t batch, Optimizer opt,
                                    const CalibrationProfile& profile, const AllocatorSettings& settings = {});

}  // namespace colo::estimate
