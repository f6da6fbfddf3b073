#pragma once
// The ranges colo accepts for numbers that come from outside (flags, job files, data sets).
// They are far beyond any real job yet small enough that no product of them can overflow the
// int64 arithmetic of the scheduler and the estimators (see ModelGraph::finalize for the model side).
#include <cstdint>

#include "core/units.h"

namespace colo::limits {

// Memory of one GPU, and so any per-GPU need, margin or step: 1 TiB (today's largest GPU: 141 GB).
constexpr MiB kMaxGpuMiB = MiB{1} << 20;
// GPUs in one (simulated) server, and GPUs one job may ask for.
constexpr std::int64_t kMaxServerGpus = 100000;
constexpr std::int64_t kMaxJobGpus = 64;
// Per-GPU batch size and tokens per sample: 2^20 each.
constexpr std::int64_t kMaxBatch = std::int64_t{1} << 20;
constexpr std::int64_t kMaxSeqLen = std::int64_t{1} << 20;
// Durations given in seconds (ramp, detection delay): one year.
constexpr double kMaxSeconds = 365.0 * 24 * 3600;
// Training epochs for the GPUMemNet classifiers, and cross-validation folds.
constexpr std::int64_t kMaxEpochs = 100000;
constexpr std::int64_t kMaxFolds = 1000;
// Input files are read whole; these caps keep a wrong or hostile file from eating the machine.
// The largest real ones are 37 KB (summaries) and 2 MB (data sets).
constexpr std::uintmax_t kMaxSummaryBytes = std::uintmax_t{16} << 20;
constexpr std::uintmax_t kMaxDataBytes = std::uintmax_t{256} << 20;
constexpr std::uintmax_t kMaxJobFileBytes = std::uintmax_t{1} << 20;

}  // namespace colo::limits
