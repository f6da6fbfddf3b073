#include "sim/mps_model.h"

#include <algorithm>

namespace colo::sim {

namespace {

class MpsModel final : public SharingModel {
 public:
  explicit MpsModel(MpsParams p) : p_(p) {}
  std::string_view name() const override { return "mps"; }
  ShareOutcome share(std::span<const double> solo) const override {
    if (solo.empty()) return {1.0, 0.0};
    double demand = 0;
    for (double s : solo) demand += s;
    const double n = static_cast<double>(solo.size());
    return {std::max(1.0, demand) * (1.0 + p_.interference * (n - 1.0)), std::min(1.0, demand)};
  }

 private:
  MpsParams p_;
};

}  // namespace

std::unique_ptr<SharingModel> make_mps_model(const MpsParams& p) { return std::make_unique<MpsModel>(p); }

}  // namespace colo::sim
