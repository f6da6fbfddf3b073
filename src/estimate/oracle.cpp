// oracle: the figure the user or a trace states (e.g. the measured peak of a previous run).
#include <fmt/format.h>

#include "core/error.h"
#include "estimate/estimator_impls.h"

namespace colo::estimate {

namespace {
class OracleEstimator final : public Estimator {
 public:
  std::string name() const override { return "oracle"; }
  Estimate estimate(const EstimateRequest& req) const override {
    if (!req.stated_mib) throw UserError("oracle needs a stated memory figure (none given)");
    if (*req.stated_mib <= 0) throw UserError(fmt::format("oracle: stated memory {} MiB is not positive", *req.stated_mib));
    return {*req.stated_mib, name(), "the stated figure"};
  }
};
}  // namespace

std::unique_ptr<Estimator> make_oracle_estimator() { return std::make_unique<OracleEstimator>(); }

}  // namespace colo::estimate
