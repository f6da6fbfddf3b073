// auto: the most trustworthy estimate available for the request, naming the one it used:
// a stated figure (oracle) beats a probe trace of the job's real training step (trace), which
// beats a simulation from a model summary (allocsim).
#include "core/error.h"
#include "estimate/estimator_impls.h"

namespace colo::estimate {

namespace {
class AutoEstimator final : public Estimator {
 public:
  std::string name() const override { return "auto"; }
  Estimate estimate(const EstimateRequest& req) const override {
    std::unique_ptr<Estimator> e;
    std::string why;
    if (req.stated_mib) {
      e = make_oracle_estimator();
      why = "a figure was stated";
    } else if (req.trace) {
      e = make_trace_estimator();
      why = "the probe recorded the training step";
    } else if (req.graph) {
      e = make_allocsim_estimator();
      why = req.graph->unknown_types().empty() ? "a model summary was given"
                                               : "a model summary was given (with unknown layer types)";
    } else {
      throw UserError("auto: nothing to estimate from (no stated figure, probe trace or model summary)");
    }
    Estimate r = e->estimate(req);
    r.explanation = "auto chose " + r.estimator + " (" + why + "): " + r.explanation;
    r.estimator = "auto(" + r.estimator + ")";
    return r;
  }
};
}  // namespace

std::unique_ptr<Estimator> make_auto_estimator() { return std::make_unique<AutoEstimator>(); }

}  // namespace colo::estimate
