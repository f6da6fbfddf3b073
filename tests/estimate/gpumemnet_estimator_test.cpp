// The gpumemnet estimator over the committed model files: it answers a bucket's upper edge, picks
// the model by family, and the committed models still score on the held-out split what their
// provenance says (so a feature change without retraining fails here).
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "estimate/estimator.h"
#include "estimate/gpumemnet/gpumemnet.h"
#include "estimate/gpumemnet/gpumemnet_dataset.h"
#include "estimate/gpumemnet/gpumemnet_metrics.h"

namespace colo::estimate {
namespace {

ModelGraph small_mlp() {
  ModelGraph g;
  g.name = "mlp";
  g.family = ModelFamily::MLP;
  g.activation = "relu";
  auto add = [&](LayerKind k, std::int64_t features, std::int64_t params) {
    Layer l;
    l.kind = k;
    l.out_shape = {features};
    l.params = params;
    g.layers.push_back(l);
  };
  add(LayerKind::Linear, 512, 1024 * 512 + 512);
  add(LayerKind::ReLU, 512, 0);
  add(LayerKind::Linear, 256, 512 * 256 + 256);
  add(LayerKind::ReLU, 256, 0);
  add(LayerKind::Linear, 10, 256 * 10 + 10);
  add(LayerKind::Softmax, 10, 0);
  return g;
}

std::string models() { return std::string(COLO_SOURCE_DIR) + "/models/gpumemnet"; }

TEST(GpuMemNetEstimator, AnswersTheUpperEdgeOfTheModelsBucket) {
  const ModelGraph g = small_mlp();
  auto est = make_gpumemnet_estimator(models(), 0);
  EstimateRequest req;
  req.graph = &g;
  req.batch = 128;
  const Estimate e = est->estimate(req);
  EXPECT_EQ(e.estimator, "gpumemnet");
  const auto model = GpuMemNetModel::load(models() + "/mlp-1gib.json");
  const int bucket = model.predict(gpumemnet_inputs(g, 128));
  EXPECT_EQ(e.mib, model.buckets.upper_edge_mib(bucket));
  EXPECT_EQ(e.mib % 1024, 0);
  EXPECT_NE(e.explanation.find("mlp-1gib.json"), std::string::npos);

  auto est2 = make_gpumemnet_estimator(models(), 2 * kGiB);
  const Estimate e2 = est2->estimate(req);
  EXPECT_EQ(e2.mib % 2048, 0);
  EXPECT_NE(e2.explanation.find("mlp-2gib.json"), std::string::npos);
}

TEST(GpuMemNetEstimator, FamilyPicksTheModel) {
  ModelGraph g = small_mlp();
  EXPECT_EQ(gpumemnet_family_for(g), "mlp");
  g.family = ModelFamily::Unknown;
  EXPECT_EQ(gpumemnet_family_for(g), "mlp");
  g.layers.front().kind = LayerKind::Conv;
  EXPECT_EQ(gpumemnet_family_for(g), "cnn");
  g.family = ModelFamily::Transformer;
  EXPECT_EQ(gpumemnet_family_for(g), "cnn");
}

TEST(GpuMemNetEstimator, RefusesMissingInputsAndMissingModels) {
  const ModelGraph g = small_mlp();
  auto est = make_gpumemnet_estimator(models(), 0);
  EstimateRequest req;
  req.batch = 8;
  EXPECT_THROW(est->estimate(req), UserError);  // no graph
  req.graph = &g;
  req.batch = 0;
  EXPECT_THROW(est->estimate(req), UserError);
  req.batch = 8;
  auto nowhere = make_gpumemnet_estimator("/nonexistent", 0);
  try {
    nowhere->estimate(req);
    FAIL() << "no model file, yet an estimate";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/mlp-1gib.json: cannot open GPUMemNet model file");
  }
  EXPECT_THROW(make_gpumemnet_estimator(models(), 1536)->estimate(req), UserError);  // not whole GiB
}

TEST(GpuMemNetEstimator, FactoryBuildsIt) { EXPECT_EQ(make_estimator("gpumemnet")->name(), "gpumemnet"); }

// The committed models against the held-out rows of the shared datasets.
TEST(GpuMemNetEstimator, CommittedModelsReproduceTheirTestScores) {
  const std::string data = std::string(COLO_SOURCE_DIR) + "/data/gpumemnet/";
  for (const auto& [family, gib] : std::vector<std::pair<std::string, int>>{{"mlp", 1}, {"cnn", 8}}) {
    const auto model = GpuMemNetModel::load(models() + "/" + family + "-" + std::to_string(gib) + "gib.json");
    const auto ds = load_gpumemnet_dataset(data + family + ".csv", parse_gpumemnet_family("gpumemnet-" + family));
    std::vector<int> truth, predicted;
    for (const auto& row : ds.rows) {
      if (!in_test_split(row.filename)) continue;
      truth.push_back(model.buckets.label(row.measured_mib, row.oom));
      predicted.push_back(model.predict(row.inputs));
    }
    const auto s = score_classification(truth, predicted);
    EXPECT_DOUBLE_EQ(s.accuracy, model.provenance["scores"]["test"]["accuracy"].get<double>()) << family;
    EXPECT_GT(s.accuracy, family == "mlp" ? 0.95 : 0.8) << family;
  }
}

}  // namespace
}  // namespace colo::estimate
