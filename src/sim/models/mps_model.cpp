#include "sim/models/mps_model.h"

#include <algorithm>

namespace colo::sim {

namespace {

class MpsModel final : public SharingModel {
 public:
  explicit MpsModel(MpsParams p) : p_(p) {}
  std::string_view name() const override { return "mps"; }
  double share_into(std::span<const double> solo, std::span<const double>, std::span<double> slowdown) const override {
    double demand = 0;
    for (double s : solo) demand += s;
    const double n = static_cast<double>(solo.size());
    const double f = std::max(1.0, demand) * (1.0 + p_.interference * std::max(0.0, n - 1.0));
    for (double& x : slowdown) x = f;  // disjoint SMs, shared in proportion to demand: alike
    return std::min(1.0, demand);
  }
  std::optional<SlowdownFloor> slowdown_floor() const override {  // the formula itself
    if (p_.interference < 0) return std::nullopt;
    return SlowdownFloor{p_.interference, -1.0};
  }

 private:
  MpsParams p_;
};

}  // namespace

std::unique_ptr<SharingModel> make_mps_model(const MpsParams& p) { return std::make_unique<MpsModel>(p); }

}  // namespace colo::sim
