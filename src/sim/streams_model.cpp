#include "sim/streams_model.h"

#include <algorithm>

namespace colo::sim {

namespace {

class StreamsModel final : public SharingModel {
 public:
  explicit StreamsModel(StreamsParams p) : p_(p) {}
  std::string_view name() const override { return "streams"; }
  ShareOutcome share(std::span<const double> solo) const override {
    if (solo.empty()) return {1.0, 0.0};
    if (solo.size() == 1) return {1.0, std::min(1.0, solo[0])};  // alone: no slicing at all
    double busy = 0, sm = 0;
    for (double s : solo) {
      busy += std::max(s, p_.busy_floor);
      sm += s;
    }
    const double overhead = 1.0 + p_.switch_overhead * (static_cast<double>(solo.size()) - 1.0);
    const double slowdown = std::max(1.0, busy) * overhead;
    return {slowdown, std::min(1.0, sm / slowdown * overhead)};
  }

 private:
  StreamsParams p_;
};

}  // namespace

std::unique_ptr<SharingModel> make_streams_model(const StreamsParams& p) {
  return std::make_unique<StreamsModel>(p);
}

}  // namespace colo::sim
