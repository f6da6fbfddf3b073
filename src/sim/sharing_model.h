#pragma once
// How jobs that share one GPU slow each other down. A model sees the solo SM activities of the
// jobs progressing on a GPU and answers (a) by how much each of them is slowed down (every
// co-runner on a GPU gets the same factor: the GPU's scheduler shares fairly in proportion to
// demand) and (b) the GPU's resulting SM activity, which the monitor and the power model see.
// Models: MPS (mps_model.h), time-sliced streams (streams_model.h).
#include <memory>
#include <optional>
#include <span>
#include <string_view>

namespace colo::sim {

struct ShareOutcome {
  double slowdown = 1.0;  // ≥ 1: wall time per unit of solo work
  double activity = 0.0;  // GPU SMACT, 0..1
};

class SharingModel {
 public:
  virtual ~SharingModel() = default;
  virtual std::string_view name() const = 0;
  // `solo_activity`: SM activity of each progressing job when alone (0..1]. Empty = idle GPU.
  virtual ShareOutcome share(std::span<const double> solo_activity) const = 0;
};

enum class SharingKind { Streams, Mps };
std::string_view to_string(SharingKind k);
std::optional<SharingKind> sharing_kind_from_string(std::string_view s);

}  // namespace colo::sim
