#pragma once
// Streams without MPS = time slicing: the GPU switches between the co-runners' contexts and a
// context holds every SM during its slice, even when its kernels occupy only a few of them. So
// what a job takes from the GPU is the share of wall time it has work queued, b, not its SM
// activity s. A GPU-bound training loop keeps work queued most of the time whatever its s:
// b = max(s, busy_floor) unless the job's own b is known (a data- or CPU-bound job, like the
// thesis' recommender, has b ≈ s). The co-runners share the GPU's time in proportion to b, every
// context switch costs, and a job waits for the others' slices in proportion to the time it
// does not itself hold the GPU:
//
//   slowdown_i = max(1, Σ b) × (1 + switch_overhead × (n − 1)) + slice_wait × (1 − b_i) × (Σ b − b_i)
//   SMACT      = (1 + switch_overhead × (n − 1)) × Σ s_i / slowdown_i   (clamped to 1)
//
// Fitted to the thesis' naïve pair (Table 4.2: recommender s = b = 0.05 +13.6 %, ResNet152
// s = 0.82 +5.7 %; the model: +13.6 % and +5.1 %). Checked against its text: two large jobs
// take as long as in sequence; with the floor, two small ones finish only ~16 % sooner than
// back to back ("barely better than sequential", as colocation on streams was in chapter 6).
#include <memory>

#include "sim/models/sharing_model.h"

namespace colo::sim {

struct StreamsParams {
  double busy_floor = 0.80;       // share of wall time a GPU-bound training loop has work queued
  double switch_overhead = 0.05;  // extra slowdown per co-runner (context switches)
  double slice_wait = 0.11;       // waiting on the others' slices, per unit of their busy share
};

std::unique_ptr<SharingModel> make_streams_model(const StreamsParams& p = {});

}  // namespace colo::sim
