#include "estimate/estimator.h"

#include "core/error.h"
#include "estimate/estimator_impls.h"
#include "estimate/parsers.h"

#include "estimate/gpumemnet.h"

namespace colo::estimate {

std::vector<std::string> estimator_names() {
  return {"oracle", "horus", "allocsim", "gpumemnet", "auto"};
}

std::unique_ptr<Estimator> make_estimator(const std::string& name) {
  if (name == "oracle") return make_oracle_estimator();
  if (name == "horus") return make_horus_estimator();
  if (name == "allocsim") return make_allocsim_estimator();
  if (name == "auto") return make_auto_estimator();
  if (name == "gpumemnet") return make_gpumemnet_estimator();
  throw UserError("unknown estimator '" + name + "' (expected oracle, horus, allocsim, gpumemnet or auto)");
}

Estimate estimate_from_summary(const std::string& summary_path, std::int64_t batch, const std::string& optimizer,
                               const std::string& estimator, std::int64_t seq_len, const std::string& gpu) {
  if (batch <= 0) throw UserError("batch size must be > 0 (got " + std::to_string(batch) + ")");
  auto est = make_estimator(estimator);
  const Optimizer opt = parse_optimizer(optimizer);
  const ModelGraph g = load_summary(summary_path, seq_len);
  EstimateRequest req;
  req.gpu = gpu;
  req.batch = batch;
  req.optimizer = opt;
  req.graph = &g;
  return est->estimate(req);
}

}  // namespace colo::estimate
