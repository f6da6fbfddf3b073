#pragma once
// Streams without MPS = time slicing: the GPU switches between the co-runners' contexts and a
// context holds every SM during its slice, even when its kernels occupy only a few of them. So
// what a job takes from the GPU is the fraction of wall time it has work queued, b, which for a
// training loop is high whatever its SM activity s:  b = max(s, busy_floor). The co-runners
// share the GPU's time in proportion to b, and every context switch costs:
//
//   slowdown = max(1, Σ b) × (1 + switch_overhead × (n − 1)),
//   SMACT    = Σ s × rate × (1 + switch_overhead × (n − 1))  (clamped to 1), rate = 1/slowdown
//
// With the defaults two small jobs (s ≈ 0.25) finish ~16 % sooner than back to back, two large
// ones (s ≈ 0.9) ~5 % sooner and two saturating ones (s = 1) 5 % later: "barely better than
// running in sequence", as the thesis measured.
#include <memory>

#include "sim/sharing_model.h"

namespace colo::sim {

struct StreamsParams {
  double busy_floor = 0.80;       // fraction of wall time a training process has GPU work queued
  double switch_overhead = 0.05;  // extra slowdown per co-runner (context switches)
};

std::unique_ptr<SharingModel> make_streams_model(const StreamsParams& p = {});

}  // namespace colo::sim
