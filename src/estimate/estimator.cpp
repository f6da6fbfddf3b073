#include "estimate/estimator.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/limits.h"
#include "estimate/estimator_impls.h"
#include "estimate/graph/parsers.h"

#include "estimate/gpumemnet/gpumemnet.h"

namespace colo::estimate {

std::vector<std::string> estimator_names() {
  return {"oracle", "horus", "allocsim", "gpumemnet", "trace", "faketensor", "auto"};
}

namespace {

// Every estimator sees a batch in 0..limits::kMaxBatch (0: not given; those that need one say
// so). With ModelGraph::finalize's bounds on a model this keeps their int64 arithmetic from
// overflowing for any request, whatever the caller (CLI, job file, data set, simulator).
class BatchChecked final : public Estimator {
 public:
  explicit BatchChecked(std::unique_ptr<Estimator> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  Estimate estimate(const EstimateRequest& req) const override {
    if (req.batch < 0 || req.batch > limits::kMaxBatch)
      throw UserError(fmt::format("{}: batch size {} is out of range (expected 1..{})", name(), req.batch,
                                  limits::kMaxBatch));
    Estimate e = inner_->estimate(req);
    // A summary estimator other than allocsim has no allocator to follow the job's settings with
    // ("auto(allocsim)" did follow them; an inner estimator of auto has said so already).
    if (req.allocator && !req.allocator->is_default() && !req.trace && e.estimator.find("allocsim") == std::string::npos &&
        e.explanation.find("allocator settings") == std::string::npos)
      e.explanation += fmt::format("; allocator settings {} not modelled by {}", req.allocator->describe(), e.estimator);
    return e;
  }

 private:
  std::unique_ptr<Estimator> inner_;
};

std::unique_ptr<Estimator> make_unchecked(const std::string& name) {
  if (name == "oracle") return make_oracle_estimator();
  if (name == "horus") return make_horus_estimator();
  if (name == "allocsim") return make_allocsim_estimator();
  if (name == "auto") return make_auto_estimator();
  if (name == "gpumemnet") return make_gpumemnet_estimator();
  if (name == "trace") return make_trace_estimator();
  if (name == "faketensor") return make_faketensor_estimator();
  return nullptr;
}

}  // namespace

std::unique_ptr<Estimator> make_estimator(const std::string& name) {
  if (auto e = make_unchecked(name)) return std::make_unique<BatchChecked>(std::move(e));
  throw UserError("unknown estimator '" + name + "' (expected oracle, horus, allocsim, gpumemnet, trace, faketensor or auto)");
}

Estimate estimate_from_summary(const std::string& summary_path, std::int64_t batch, const std::string& optimizer,
                               const std::string& estimator, std::int64_t seq_len, const std::string& gpu,
                               const AllocatorSettings* allocator) {
  if (batch <= 0 || batch > limits::kMaxBatch)
    throw UserError(fmt::format("batch size {} is out of range (expected 1..{})", batch, limits::kMaxBatch));
  auto est = make_estimator(estimator);
  const Optimizer opt = parse_optimizer(optimizer);
  const ModelGraph g = load_summary(summary_path, seq_len);
  EstimateRequest req;
  req.gpu = gpu;
  req.batch = batch;
  req.optimizer = opt;
  req.graph = &g;
  req.allocator = allocator;
  return est->estimate(req);
}

}  // namespace colo::estimate
