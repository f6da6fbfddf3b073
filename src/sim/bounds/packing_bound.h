#pragma once
// A tighter bound for shared GPUs: the configuration linear programme (docs/SIMULATOR.md,
// "Lower bound").
//
// Split every job into one piece per GPU it uses, each needing its solo time of progress with
// its memory resident (the progress a job can make before its memory is resident is left out).
// A GPU running a configuration S (pieces that fit its memory together) progresses each of
// them at rate ≤ 1 / F(S), with F the sharing model's slowdown floor (SlowdownFloor). Then
//
//   GPU-seconds ≥ min Σ_S t_S   subject to   Σ_S t_S × count_k(S) / F(S) ≥ W_k   for every type k
//
// (W_k: the progress the pieces of type k need). Any schedule is one solution of it, so its
// optimum bounds the makespan from below once divided by the GPUs. Unlike the SM-activity term
// it knows that small jobs can fill a GPU only by adding co-runners, that every co-runner costs,
// and that large ones do not fit together. Solved by column generation (covering_lp.h) priced by
// configuration_pricing.h; what it reports is certified by the pricing's upper bound (weak
// duality), so it stays a bound even when the column generation stops early.
//
// Release times: jobs submitted after a cut time c cannot start before it, so the bound is the
// most, over cuts, of (c − origin) + the programme for those jobs alone. Progress cuts: before a
// time t the earlier jobs progress at most t − submit − ramp each, so the makespan is at least
// (t − origin) + (the programme for all − the programme for that progress) / gpus (packing_bound.cpp).
#include <optional>
#include <span>

#include "sim/models/sharing_model.h"
#include "sim/sim_job.h"

namespace colo::sim {

struct PackingBoundSetup {
  int gpus = 1;
  int gpus_per_node = 1;           // a job with more GPUs never completes (left out, as in lower_bound)
  MiB gpu_memory_mib = 0;
  Seconds memory_free_s = 0;       // progress a job can make before its memory is resident (the ramp)
  Seconds origin_s = 0;            // the first submission: the bound is measured from it
  SlowdownFloor floor;
  int cuts = 8;                    // release-time cuts tried (the origin and submit-time quantiles)
  int progress_cuts = 16;          // progress cuts tried (submit-time quantiles and an even grid; 0 = none)
};

struct PackingBound {
  Seconds value_s = 0;   // max over release and progress cuts (see above)
  Seconds work_s = 0;    // the programme for every job / gpus (the cut at the origin)
  double busy_gpu_seconds = 0;  // the programme itself at the origin cut: GPU-seconds with a job progressing
  int types = 0;         // distinct (memory, demand) pieces
  int columns = 0;       // configurations generated (all cuts)
  int rounds = 0;        // pricing rounds (all cuts)
  double gap = 0;        // pricing's certified excess at the origin cut: 0 = the programme's optimum
};

// None when no job can complete. Memoised: the last few answers are kept, keyed by every input
// the bound reads (`colo sim --compare` runs one trace under ~20 policies per sharing model).
std::optional<PackingBound> packing_bound(std::span<const SimJobSpec> jobs, const PackingBoundSetup& setup);
// The same, always computed (benchmarks).
std::optional<PackingBound> compute_packing_bound(std::span<const SimJobSpec> jobs, const PackingBoundSetup& setup);

}  // namespace colo::sim
