#pragma once
// Fitting the sharing models to pair measurements (what `colo bench collocation` measures on a
// site's own GPUs, or the thesis' Table 4.2): each job's throughput alone and beside others gives
// its slowdown; with the jobs' solo SM activity s and busy share b (NVML utilisation: the share
// of time a kernel runs) the models' constants follow:
//   MPS      slowdown_i = max(1, D) × (1 + k (n − 1))                         → k = interference
//   streams  slowdown_i = max(1, Σb) × (1 + o (n − 1)) + w (1 − b_i)(Σb − b_i) → o = switch_overhead,
//                                                                                w = slice_wait
//   MIG      alone on an instance: slowdown = max(1, s / c)                   → c = capacity
// (sim/models/mps_model.h, streams_model.h, mig_model.h): MPS and streams by least squares of
// the slowdowns (streams: both constants, or the better single one when the data cannot separate
// them), MIG as the mean of s / slowdown over the runs the instance slowed. Pure: no I/O.
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace colo::sim {

// Jobs running at once on one GPU (MPS or streams): per job its solo SMACT, its solo busy share
// when measured, and its slowdown (solo throughput / shared throughput).
struct CoRun {
  std::vector<double> smact;
  std::vector<std::optional<double>> busy;
  std::vector<double> slowdown;
};

// One job alone on a MIG instance: the instance's compute slices (1, 2, 3, 4 or 7), the job's
// solo SMACT on the whole GPU, and its slowdown against the whole GPU.
struct MigRun {
  int compute_slices = 0;
  double smact = 0;
  double slowdown = 0;
};

struct FittedParam {
  double value = 0;
  int observations = 0;  // slowdowns the value rests on
  double rms = 0;        // root-mean-square error of the fitted model's slowdowns
};

// nullopt when there is no co-run with ≥ 2 jobs. Values clamped to [0, 10] (the model file's range).
std::optional<FittedParam> fit_mps_interference(std::span<const CoRun> runs);

struct StreamsFit {
  FittedParam switch_overhead, slice_wait;
};
// A job without a measured busy share takes max(s, busy_floor), as the model does.
std::optional<StreamsFit> fit_streams(std::span<const CoRun> runs, double busy_floor);

// Per instance size: nullopt when no run on it was slowed (then the data only says c ≥ s).
// A run that was not slowed (slowdown ≤ 1.02) only bounds c from below and is not averaged.
std::optional<FittedParam> fit_mig_capacity(std::span<const MigRun> runs, int compute_slices);

// Checks a co-run's shape and numbers: "" or the problem (sizes differ, fewer than 2 jobs,
// SMACT or busy outside [0, 1], a slowdown not finite and > 0).
std::string corun_problem(const CoRun& r);

}  // namespace colo::sim
