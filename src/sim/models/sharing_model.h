#pragma once
// How jobs that share one GPU slow each other down. A model sees the solo SM activities of the
// jobs progressing on a GPU and answers (a) by how much each of them is slowed down (one factor
// per co-runner: under MPS they are alike, under time slicing a light job waits on the heavy
// one's slices longer than the other way round) and (b) the GPU's resulting SM activity, which
// the monitor and the power model see. Models: MPS (mps_model.h), time-sliced streams
// (streams_model.h); their parameters are fitted to the thesis' chapter-4 pairs (docs/SIMULATOR.md).
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace colo::sim {

struct ShareOutcome {
  std::vector<double> slowdown;  // per co-runner, in the input's order: ≥ 1, wall time per unit of solo work
  double activity = 0.0;         // GPU SMACT, 0..1
};

// A floor every co-runner's slowdown respects, whatever the mix — what the packing bound
// (sim/bounds/packing_bound.h) may rely on:
//   slowdown ≥ max(1, Σ demand) × (1 + per_corunner × (n − 1))
struct SlowdownFloor {
  double per_corunner = 0;
  // < 0: a job's demand is its solo SM activity (MPS: disjoint SMs). Otherwise (time slicing) it
  // is the share of wall time the job has work queued: its own when known, else max(solo, busy_floor).
  double busy_floor = -1;
  double demand(double solo, double busy) const;
};

class SharingModel {
 public:
  virtual ~SharingModel() = default;
  virtual std::string_view name() const = 0;
  // `solo_activity`: SM activity of each progressing job when alone (0..1]. `busy`: the share of
  // wall time each has GPU work queued, when known (empty, or a negative entry: the model's
  // default for a training loop). Writes one slowdown per job into `slowdown` (same size as
  // `solo_activity`) and returns the GPU's SM activity. Empty input = idle GPU.
  virtual double share_into(std::span<const double> solo_activity, std::span<const double> busy,
                            std::span<double> slowdown) const = 0;
  // The floor this model guarantees; none: no bound may assume one.
  virtual std::optional<SlowdownFloor> slowdown_floor() const { return std::nullopt; }
  // The same, allocating (tests, reports).
  ShareOutcome share(std::span<const double> solo_activity, std::span<const double> busy = {}) const {
    ShareOutcome o;
    o.slowdown.resize(solo_activity.size());
    o.activity = share_into(solo_activity, busy, o.slowdown);
    return o;
  }
};

enum class SharingKind { Streams, Mps };
std::string_view to_string(SharingKind k);
std::optional<SharingKind> sharing_kind_from_string(std::string_view s);

}  // namespace colo::sim
