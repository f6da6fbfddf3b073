#include "estimate/gpumemnet/gpumemnet_training.h"

#include <fmt/format.h>

#include "core/error.h"

namespace colo::estimate {

namespace {

Eigen::MatrixXd columns(const Eigen::MatrixXd& x, const std::vector<std::size_t>& idx) {
  Eigen::MatrixXd out(x.rows(), static_cast<Eigen::Index>(idx.size()));
  for (std::size_t i = 0; i < idx.size(); ++i) out.col(static_cast<Eigen::Index>(i)) = x.col(static_cast<Eigen::Index>(idx[i]));
  return out;
}

std::vector<int> pick(const std::vector<int>& v, const std::vector<std::size_t>& idx) {
  std::vector<int> out;
  out.reserve(idx.size());
  for (auto i : idx) out.push_back(v[i]);
  return out;
}

}  // namespace

GpuMemNetModel train_gpumemnet(const Eigen::MatrixXd& raw, const std::vector<int>& labels,
                               const MemoryBuckets& buckets, const std::string& kind, const EnsembleConfig& config) {
  if (raw.cols() == 0) throw UserError("gpumemnet: no training rows");
  if (config.members.empty()) throw UserError("gpumemnet: an ensemble needs at least one member");
  GpuMemNetModel model;
  model.kind = kind;
  model.buckets = buckets;
  model.standardizer = Standardizer::fit(raw);
  const Eigen::MatrixXd x = model.standardizer.apply(raw);
  for (std::size_t i = 0; i < config.members.size(); ++i) {
    std::vector<int> sizes{static_cast<int>(raw.rows())};
    sizes.insert(sizes.end(), config.members[i].begin(), config.members[i].end());
    sizes.push_back(buckets.classes());
    const std::uint64_t member_seed = config.seed + 7919 * (i + 1);  // distinct, reproducible per member
    MlpClassifier net(sizes, member_seed);
    AdamOptions adam = config.adam;
    adam.seed = member_seed ^ 0x5DEECE66DULL;
    train_adam(net, x, labels, adam);
    model.members.push_back(std::move(net));
    if (config.member_done) config.member_done();
  }
  return model;
}

std::vector<int> kfold_assignment(std::size_t n, int k, std::uint64_t seed) {
  if (n < 2) throw UserError(fmt::format("gpumemnet: {}-fold cross-validation needs at least 2 rows, the data has {}", k, n));
  if (k < 2 || static_cast<std::size_t>(k) > n)
    throw UserError(fmt::format("gpumemnet: {}-fold cross-validation needs between 2 and {} folds ({} rows)", k, n, n));
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  DeterministicRng rng(seed);
  rng.shuffle(order);
  std::vector<int> fold(n);
  for (std::size_t pos = 0; pos < n; ++pos) fold[order[pos]] = static_cast<int>(pos * static_cast<std::size_t>(k) / n);
  return fold;
}

std::vector<ClassificationScores> cross_validate(const Eigen::MatrixXd& raw, const std::vector<int>& labels,
                                                 const MemoryBuckets& buckets, const std::string& kind,
                                                 const EnsembleConfig& config, int k) {
  const auto fold = kfold_assignment(static_cast<std::size_t>(raw.cols()), k, config.seed);
  std::vector<ClassificationScores> scores;
  for (int f = 0; f < k; ++f) {
    std::vector<std::size_t> train, held;
    for (std::size_t i = 0; i < fold.size(); ++i) (fold[i] == f ? held : train).push_back(i);
    const auto model = train_gpumemnet(columns(raw, train), pick(labels, train), buckets, kind, config);
    scores.push_back(score_classification(pick(labels, held), model.predict(columns(raw, held))));
  }
  return scores;
}

}  // namespace colo::estimate
