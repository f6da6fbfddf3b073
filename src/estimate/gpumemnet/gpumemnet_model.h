#pragma once
// A trained GPUMemNet classifier: memory buckets, feature standardisation and an ensemble of MLPs
// of varied depth whose averaged class probabilities pick the bucket. The estimate is the chosen
// bucket's upper edge. Saved as one JSON file (models/gpumemnet/*.json) that also records how it
// was trained and what it scored.
#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "estimate/gpumemnet/gpumemnet_features.h"
#include "estimate/gpumemnet/mlp_classifier.h"

namespace colo::estimate {

// Buckets [k·width, (k+1)·width) for k below capacity/width, plus one "does not fit" bucket right
// above the GPU's capacity for runs that crashed out of memory, so that its upper edge exceeds the
// capacity and the estimate says "will not fit".
struct MemoryBuckets {
  MiB width_mib = 1024;
  MiB capacity_mib = 40 * 1024;  // A100 40 GB, the GPU the datasets were measured on

  int oom_label() const;  // ceil(capacity / width)
  int classes() const { return oom_label() + 1; }
  int label(double measured_mib, bool oom) const;  // measured must be >= 0
  MiB upper_edge_mib(int label) const { return (static_cast<MiB>(label) + 1) * width_mib; }
};

class GpuMemNetModel {
 public:
  std::string kind;  // "mlp" or "cnn": the dataset family it was trained on
  MemoryBuckets buckets;
  Standardizer standardizer;
  std::vector<MlpClassifier> members;
  nlohmann::json provenance = nlohmann::json::object();  // training command, data, scores

  // raw: unstandardised features (gpumemnet_features) × samples. Result: classes × samples.
  Eigen::MatrixXd predict_proba(const Eigen::MatrixXd& raw) const;
  std::vector<int> predict(const Eigen::MatrixXd& raw) const;
  int predict(const GpuMemNetInputs& in) const;

  nlohmann::json to_json() const;
  // Throws colo::UserError "<where>: ..." (one line) for anything malformed or inconsistent,
  // including a feature list that differs from this build's.
  static GpuMemNetModel from_json(const nlohmann::json& j, const std::string& where);

  void save(const std::string& path) const;
  static GpuMemNetModel load(const std::string& path);  // missing/corrupt file -> UserError naming it
};

}  // namespace colo::estimate
