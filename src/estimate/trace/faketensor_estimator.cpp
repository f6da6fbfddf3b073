// faketensor: the baseline the thesis compares against: the peak of live tensor bytes over the
// probe's two iterations (what FakeTensor-based tools report), with no allocator model, no
// workspaces and no CUDA context. The gap to `trace` is what those add.
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "estimate/estimator_impls.h"
#include "estimate/trace/trace_replay.h"

namespace colo::estimate {

namespace {

class FakeTensorEstimator final : public Estimator {
 public:
  std::string name() const override { return "faketensor"; }
  Estimate estimate(const EstimateRequest& req) const override {
    if (!req.trace) throw UserError("faketensor needs a probe trace (--probe MODEL or --trace FILE)");
    const auto r = replay_probe_trace(*req.trace, TraceReplayOptions{});
    Estimate e;
    e.estimator = name();
    e.peak_mib = mib_of_bytes(r.live_peak);
    e.mib = static_cast<MiB>(std::ceil(mib_of_bytes(r.live_peak)));
    e.explanation = fmt::format("peak of live tensor bytes {:.0f} MiB at {} (no allocator, workspaces or context)",
                                mib_of_bytes(r.live_peak), r.live_peak_at);
    return e;
  }
};

}  // namespace

std::unique_ptr<Estimator> make_faketensor_estimator() { return std::make_unique<FakeTensorEstimator>(); }

}  // namespace colo::estimate
