#pragma once
// Training GPUMemNet ensembles and scoring them with k-fold cross-validation. Deterministic: the
// same data, configuration and seed give bit-identical models on the same build.
#include <cstdint>
#include <string>
#include <functional>
#include <vector>

#include <Eigen/Dense>

#include "estimate/gpumemnet/gpumemnet_metrics.h"
#include "estimate/gpumemnet/gpumemnet_model.h"
#include "estimate/gpumemnet/mlp_classifier.h"

namespace colo::estimate {

struct EnsembleConfig {
  // Hidden layer widths of each member; varied depth, as in the thesis' ensemble.
  std::vector<std::vector<int>> members = {{32}, {32, 16}, {64, 32}, {64, 32, 16}};
  // Called after each member is trained (progress meters); may be empty.
  std::function<void()> member_done;
  AdamOptions adam;
  std::uint64_t seed = 20240501;  // member weights and batch order derive from it
};

// raw: features × samples (unstandardised), labels in [0, buckets.classes()).
GpuMemNetModel train_gpumemnet(const Eigen::MatrixXd& raw, const std::vector<int>& labels,
                               const MemoryBuckets& buckets, const std::string& kind, const EnsembleConfig& config);

// Fold of each sample for k-fold cross-validation: a seeded shuffle cut into k near-equal parts.
std::vector<int> kfold_assignment(std::size_t n, int k, std::uint64_t seed);

// Trains on k-1 folds, scores on the held-out one, for each fold in turn (standardisation is
// refitted inside every fold so no statistic leaks from the held-out part).
std::vector<ClassificationScores> cross_validate(const Eigen::MatrixXd& raw, const std::vector<int>& labels,
                                                 const MemoryBuckets& buckets, const std::string& kind,
                                                 const EnsembleConfig& config, int k);

}  // namespace colo::estimate
