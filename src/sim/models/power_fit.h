#pragma once
// Fitting the power model (power_model.h) to what `colo bench collocation` measured on a site's
// own GPU: the board's mean power with no job (idle), with each job alone, and with jobs sharing.
// The model draws busy_watts + (max_watts − busy_watts) × work, work = Σ solo SMACT × rate: each
// job's dynamic energy is the same wherever it runs, and what sharing saves is the busy floor a
// job no longer pays alone. Measured on an H200 (docs/GPU-VALIDATION.md §5), jobs differ in watts
// per unit of SMACT, so one line through every window fits badly, but the conservation holds per
// job. So the fit uses it per job:
//   busy_watts: a shared window drew P = B + Σ (P_j − B) × rate_j, with P_j job j's power alone;
//               B by least squares over the shared windows (it rests on Σ rate_j ≠ 1: sharing that
//               slowed the jobs, or not);
//   max_watts:  B + k, k the least-squares slope through (s_j, P_j − B) of the solo runs: the mean
//               watts per unit of SMACT, all the simulator keeps of the jobs' differences.
// Pure: no I/O.
#include <optional>
#include <span>
#include <vector>

#include "sim/models/collocation_fit.h"

namespace colo::sim {

struct PowerSolo {
  double smact = 0;  // the job's solo SM activity (0..1]
  double watts = 0;  // the board's mean power with it alone
};

struct PowerShared {
  std::vector<int> jobs;       // indices into the solo runs
  std::vector<double> rates;   // each job's progress rate there (1 / slowdown)
  double watts = 0;
};

struct PowerFit {
  FittedParam idle_watts, busy_watts, max_watts;
  // How well the two parts hold: the shared windows' rms under the per-job conservation (the part
  // that decides what sharing saves), and the solo runs' rms about the one line (how much the
  // jobs differ in watts per SMACT).
  double shared_rms = 0, solo_line_rms = 0;
  bool busy_fitted = false;  // false: no shared window could fix B, the given busy level was kept
  double busy_least_squares = 0;  // B as the shared windows gave it, before the bounds below
  bool busy_raised_to_idle = false, busy_capped_at_solo = false;
  std::vector<int> solo_used;  // the solo runs the slope rests on
};

// B rests on Σ (1 − Σ_j rate_j)² over the shared windows: noise in a window's power reaches B
// multiplied by 1 / |1 − Σ rate_j|, so below this (one window with |1 − Σ rate| = 0.2) B is
// not fitted.
inline constexpr double kMinFloorLeverage = 0.04;

// busy_watts comes from the shared windows, bounded to [measured idle, the lowest solo power the
// windows name] (a floor above a job's own power would give it negative dynamic power), or (none
// usable, too little leverage: MIG runs, no pairs, rates summing to ≈ 1) is `fallback_busy`
// raised to the measured idle; idle_watts unmeasured has observations 0 and the busy value. nullopt when no solo run with SMACT ≥ 0.05 and power remains.
// Values ordered as the model file requires (idle ≤ busy ≤ max): a fitted B below the measured idle
// is raised to it, a negative slope gives max = busy. Unusable entries (not finite, out of range,
// a shared window naming an unknown solo run) are left out.
std::optional<PowerFit> fit_power(std::optional<double> idle_watts, std::span<const PowerSolo> solo,
                                  std::span<const PowerShared> shared, double fallback_busy);

}  // namespace colo::sim
