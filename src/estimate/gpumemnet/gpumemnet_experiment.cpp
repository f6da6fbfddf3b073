#include "estimate/gpumemnet/gpumemnet_experiment.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace colo::estimate {

namespace {

struct SplitMatrix {
  Eigen::MatrixXd x;
  std::vector<int> y;
  std::vector<const GpuMemNetRow*> rows;
};

void add(SplitMatrix& s, const GpuMemNetRow& row, const MemoryBuckets& b) {
  s.rows.push_back(&row);
  s.y.push_back(b.label(row.measured_mib, row.oom));
}

void build_matrix(SplitMatrix& s) {
  s.x.resize(kGpuMemNetFeatureCount, static_cast<Eigen::Index>(s.rows.size()));
  for (std::size_t i = 0; i < s.rows.size(); ++i) s.x.col(static_cast<Eigen::Index>(i)) = gpumemnet_features(s.rows[i]->inputs);
}

EdgeErrors edge_errors(const SplitMatrix& test, const std::vector<int>& predicted, const MemoryBuckets& b) {
  EdgeErrors e;
  std::vector<double> rel;
  int under = 0;
  for (std::size_t i = 0; i < test.rows.size(); ++i) {
    const MiB estimate = b.upper_edge_mib(predicted[i]);
    if (test.rows[i]->oom) {
      ++e.oom_rows;
      e.oom_predicted += estimate > b.capacity_mib;
      continue;
    }
    const double measured = test.rows[i]->measured_mib;
    rel.push_back(std::abs(static_cast<double>(estimate) - measured) / measured);
    under += static_cast<double>(estimate) < measured;
  }
  e.n = static_cast<int>(rel.size());
  if (!rel.empty()) {
    std::sort(rel.begin(), rel.end());
    const std::size_t m = rel.size() / 2;
    e.median_abs_rel_err = rel.size() % 2 ? rel[m] : (rel[m - 1] + rel[m]) / 2;
    e.under_rate = static_cast<double>(under) / static_cast<double>(rel.size());
  }
  return e;
}

}  // namespace

nlohmann::json to_json(const ClassificationScores& s) {
  return {{"n", s.n}, {"accuracy", s.accuracy}, {"precision", s.precision}, {"recall", s.recall}, {"f1", s.f1}};
}

nlohmann::json to_json(const GpuMemNetExperimentResult& r) {
  nlohmann::json folds = nlohmann::json::array();
  for (const auto& f : r.folds) folds.push_back(to_json(f));
  nlohmann::json j = {{"train_rows", r.train_rows}, {"test_rows", r.test_rows}, {"unmeasured_rows", r.unmeasured_rows},
                      {"no_layer_rows", r.no_layer_rows}};
  if (!r.folds.empty()) j["cv"] = {{"k", r.folds.size()}, {"mean", to_json(r.cv.mean)}, {"std", to_json(r.cv.stddev)}, {"folds", folds}};
  if (!r.model.members.empty()) {
    j["test"] = to_json(r.test);
    j["test_upper_edge"] = {{"n", r.test_edges.n},
                            {"median_abs_rel_err", r.test_edges.median_abs_rel_err},
                            {"under_rate", r.test_edges.under_rate},
                            {"oom_rows", r.test_edges.oom_rows},
                            {"oom_predicted", r.test_edges.oom_predicted}};
  }
  return j;
}

GpuMemNetExperimentResult run_gpumemnet_experiment(const GpuMemNetExperiment& e) {
  if (e.bucket_mib <= 0) throw UserError("gpumemnet: bucket width must be positive");
  const auto data = load_gpumemnet_dataset(e.dataset, e.family);
  MemoryBuckets buckets{e.bucket_mib, e.capacity_mib};
  SplitMatrix train, test;
  for (const auto& row : data.rows) {
    if (e.drop_oom && row.oom) continue;
    add(in_test_split(row.filename) ? test : train, row, buckets);
  }
  if (train.rows.empty() || test.rows.empty()) throw UserError(fmt::format("{}: too few rows to split", e.dataset));
  build_matrix(train);
  build_matrix(test);

  GpuMemNetExperimentResult r;
  r.train_rows = static_cast<int>(train.rows.size());
  r.test_rows = static_cast<int>(test.rows.size());
  r.unmeasured_rows = data.unmeasured;
  r.no_layer_rows = data.no_layers;
  const std::string kind(to_string(e.family));
  if (e.folds >= 2) {
    r.folds = cross_validate(train.x, train.y, buckets, kind, e.config, e.folds);
    r.cv = summarize(r.folds);
  }
  if (e.final_model) {
    r.model = train_gpumemnet(train.x, train.y, buckets, kind, e.config);
    const auto predicted = r.model.predict(test.x);
    r.test = score_classification(test.y, predicted);
    r.test_edges = edge_errors(test, predicted, buckets);
    nlohmann::json members = nlohmann::json::array();
    for (const auto& m : e.config.members) members.push_back(m);
    r.model.provenance = {
        {"command", e.command},
        {"dataset", e.dataset},
        {"oom_rows", e.drop_oom ? "dropped" : "own bucket above capacity"},
        {"split", "test = !in_train_split(Filename) (estimate/dataset.h); rows with an empty layer list or with Status SUCCESSFUL and 0 MiB measured are dropped"},
        {"ensemble", {{"hidden", members},
                      {"epochs", e.config.adam.epochs},
                      {"batch_size", e.config.adam.batch_size},
                      {"learning_rate", e.config.adam.learning_rate},
                      {"l2", e.config.adam.l2},
                      {"seed", e.config.seed}}},
        {"scores", to_json(r)}};
  }
  return r;
}

}  // namespace colo::estimate
