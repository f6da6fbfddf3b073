// horus: the analytical formula of Yeung et al. (Horus), kept for comparison:
//   memory = (B*A + P) + (B*G) + d
// A = activation bytes per sample (sum of every layer's output), G = their gradients (= A),
// P = parameter bytes, d = the profile's fixed overhead (CUDA context). It ignores optimizer
// state, the caching allocator and what is really kept for backward.
#include <cmath>
#include <fmt/format.h>

#include "core/error.h"
#include "estimate/calibration/calibration_profile.h"
#include "estimate/estimator_impls.h"

namespace colo::estimate {

namespace {
class HorusEstimator final : public Estimator {
 public:
  std::string name() const override { return "horus"; }
  Estimate estimate(const EstimateRequest& req) const override {
    if (!req.graph) throw UserError("horus needs a model summary");
    if (req.batch <= 0) throw UserError("horus needs a batch size > 0");
    const auto& g = *req.graph;
    const auto profile = load_profile(req.gpu);
    const double mib = 1048576.0;
    const double A = static_cast<double>(g.total_activations() * g.dtype_bytes);
    const double G = A;
    const double P = static_cast<double>(g.total_params() * g.dtype_bytes);
    const double B = static_cast<double>(req.batch);
    const double total = (B * A + P + B * G) / mib + profile.context_mib;
    return {static_cast<MiB>(std::ceil(total)), name(),
            fmt::format("(B*A + P) + B*G + d = ({}*{:.1f} + {:.1f}) + {}*{:.1f} + {:.0f} MiB", req.batch, A / mib,
                        P / mib, req.batch, G / mib, profile.context_mib)};
  }
};
}  // namespace

std::unique_ptr<Estimator> make_horus_estimator() { return std::make_unique<HorusEstimator>(); }

}  // namespace colo::estimate
