#include "estimate/gpumemnet/gpumemnet.h"
#include "common/resource_path.h"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "core/error.h"

namespace colo::estimate {

std::string default_gpumemnet_model_dir() {
  if (const char* d = std::getenv("COLO_GPUMEMNET_MODELS"); d && *d) return d;
  return resource_path(nullptr, "models/gpumemnet", "");
}

std::string gpumemnet_model_path(const std::string& dir, const std::string& family, MiB bucket_mib) {
  if (bucket_mib <= 0 || bucket_mib % kGiB != 0) {
    throw UserError(fmt::format("gpumemnet: bucket width {} MiB is not a whole number of GiB", bucket_mib));
  }
  return (std::filesystem::path(dir) / fmt::format("{}-{}gib.json", family, bucket_mib / kGiB)).string();  // no "//"
}

std::string gpumemnet_family_for(const ModelGraph& graph) {
  if (graph.family == ModelFamily::MLP) return "mlp";
  if (graph.family != ModelFamily::Unknown) return "cnn";
  const bool pure_mlp = graph.count(LayerKind::Linear) > 0 && graph.count(LayerKind::Conv) == 0 &&
                        graph.count(LayerKind::ConvTranspose) == 0 && graph.count(LayerKind::Attention) == 0 &&
                        graph.count(LayerKind::Embedding) == 0;
  return pure_mlp ? "mlp" : "cnn";
}

namespace {

class GpuMemNetEstimator final : public Estimator {
 public:
  GpuMemNetEstimator(std::string dir, MiB bucket_mib) : dir_(std::move(dir)), bucket_mib_(bucket_mib) {}

  std::string name() const override { return "gpumemnet"; }

  Estimate estimate(const EstimateRequest& req) const override {
    if (!req.graph) throw UserError("gpumemnet needs a model summary");
    if (req.batch <= 0) throw UserError(fmt::format("gpumemnet needs a batch size > 0 (got {})", req.batch));
    const std::string family = gpumemnet_family_for(*req.graph);
    const MiB width = bucket_mib_ > 0 ? bucket_mib_ : (family == "mlp" ? 1 * kGiB : 8 * kGiB);
    const std::string path = gpumemnet_model_path(dir_, family, width);
    const GpuMemNetModel& model = load(path);
    const GpuMemNetInputs in = gpumemnet_inputs(*req.graph, req.batch);
    const Eigen::MatrixXd p = model.predict_proba(Eigen::MatrixXd(gpumemnet_features(in)));
    Eigen::Index best = 0;
    const double prob = p.col(0).maxCoeff(&best);
    const int bucket = static_cast<int>(best);
    const MiB edge = model.buckets.upper_edge_mib(bucket);
    std::string what =
        bucket == model.buckets.oom_label()
            ? fmt::format("predicted not to fit in {} MiB", model.buckets.capacity_mib)
            : fmt::format("bucket [{}, {}) MiB", edge - model.buckets.width_mib, edge);
    return {edge, name(),
            fmt::format("{} model {}: {} (p={:.2f}), upper edge; {} layers, {} params, {} activations/sample, "
                        "activation {}; trained on A100 40 GB runs, optimizer not a feature",
                        family, path, what, prob, req.graph->layers.size(), in.params, in.activations,
                        in.activation)};
  }

 private:
  const GpuMemNetModel& load(const std::string& path) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(path);
    if (it == cache_.end()) it = cache_.emplace(path, GpuMemNetModel::load(path)).first;
    return it->second;  // std::map nodes never move: the reference stays valid
  }

  std::string dir_;
  MiB bucket_mib_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, GpuMemNetModel> cache_;
};

}  // namespace

std::unique_ptr<Estimator> make_gpumemnet_estimator() { return make_gpumemnet_estimator(default_gpumemnet_model_dir(), 0); }

std::unique_ptr<Estimator> make_gpumemnet_estimator(const std::string& model_dir, MiB bucket_mib) {
  if (bucket_mib < 0) throw UserError("gpumemnet: bucket width must not be negative");
  return std::make_unique<GpuMemNetEstimator>(model_dir, bucket_mib);
}

}  // namespace colo::estimate
