#include "sim/models/streams_model.h"

#include <algorithm>

namespace colo::sim {

namespace {

class StreamsModel final : public SharingModel {
 public:
  explicit StreamsModel(StreamsParams p) : p_(p) {}
  std::string_view name() const override { return "streams"; }

  double share_into(std::span<const double> solo, std::span<const double> busy,
                    std::span<double> slowdown) const override {
    if (solo.empty()) return 0.0;
    if (solo.size() == 1) {  // alone: no slicing at all
      slowdown[0] = 1.0;
      return std::min(1.0, solo[0]);
    }
    auto busy_of = [&](std::size_t i) {
      return i < busy.size() && busy[i] >= 0 ? std::min(1.0, busy[i]) : std::max(solo[i], p_.busy_floor);
    };
    double total = 0;
    for (std::size_t i = 0; i < solo.size(); ++i) total += busy_of(i);
    const double overhead = 1.0 + p_.switch_overhead * (static_cast<double>(solo.size()) - 1.0);
    const double base = std::max(1.0, total) * overhead;
    double sm = 0;
    for (std::size_t i = 0; i < solo.size(); ++i) {
      const double b = busy_of(i);
      slowdown[i] = base + p_.slice_wait * (1.0 - b) * (total - b);
      sm += solo[i] / slowdown[i];
    }
    return std::min(1.0, sm * overhead);
  }
  // Each slowdown is base plus a non-negative wait: base = max(1, Σ b) × overhead is the floor.
  std::optional<SlowdownFloor> slowdown_floor() const override {
    if (p_.slice_wait < 0 || p_.switch_overhead < 0) return std::nullopt;
    return SlowdownFloor{p_.switch_overhead, std::max(0.0, p_.busy_floor)};
  }

 private:
  StreamsParams p_;
};

}  // namespace

std::unique_ptr<SharingModel> make_streams_model(const StreamsParams& p) {
  return std::make_unique<StreamsModel>(p);
}

}  // namespace colo::sim
