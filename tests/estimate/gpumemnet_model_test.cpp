// GPUMemNet ensembles: buckets, training and k-fold CV on a synthetic problem, model-file round
// trip, and one-line errors for missing or corrupt model files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "estimate/gpumemnet/gpumemnet_training.h"

namespace colo::estimate {
namespace {

TEST(GpuMemNetBuckets, LabelsEdgesAndTheOomBucket) {
  MemoryBuckets b{8192, 40960};
  EXPECT_EQ(b.oom_label(), 5);
  EXPECT_EQ(b.classes(), 6);
  EXPECT_EQ(b.label(0.5, false), 0);
  EXPECT_EQ(b.label(8191, false), 0);
  EXPECT_EQ(b.label(8192, false), 1);
  EXPECT_EQ(b.label(40369, false), 4);
  EXPECT_EQ(b.label(36000, true), 5);
  EXPECT_EQ(b.upper_edge_mib(0), 8192);
  EXPECT_GT(b.upper_edge_mib(b.oom_label()), b.capacity_mib);  // "does not fit"
  MemoryBuckets g1{1024, 40960};
  EXPECT_EQ(g1.classes(), 41);
  EXPECT_EQ(g1.upper_edge_mib(g1.label(1573, false)), 2048);
}

// Synthetic rows whose bucket is a function of batch × activations, like real memory.
void synthetic(int n, std::uint64_t seed, Eigen::MatrixXd& x, std::vector<int>& y, const MemoryBuckets& b) {
  DeterministicRng rng(seed);
  x.resize(kGpuMemNetFeatureCount, n);
  y.clear();
  for (int i = 0; i < n; ++i) {
    GpuMemNetInputs in;
    in.linear = 3 + static_cast<std::int64_t>(rng.below(5));
    in.depth = in.linear;
    in.batch = 1 + static_cast<std::int64_t>(rng.below(512));
    in.activations = 1000 + static_cast<std::int64_t>(rng.below(20000));
    in.params = 10000 + static_cast<std::int64_t>(rng.below(100000));
    in.activation = known_activations()[rng.below(known_activations().size())];
    x.col(i) = gpumemnet_features(in);
    const double mib = 1000 + static_cast<double>(in.batch * in.activations) * 4 * 3 / 1048576.0;
    y.push_back(b.label(mib, false));
  }
}

EnsembleConfig small_config() {
  EnsembleConfig c;
  c.members = {{16}, {16, 8}};
  c.adam.epochs = 60;
  c.adam.batch_size = 32;
  c.adam.learning_rate = 1e-2;
  return c;
}

TEST(GpuMemNetTraining, EnsembleLearnsSyntheticBucketsAndCvIsDeterministic) {
  MemoryBuckets b{1024, 8192};
  Eigen::MatrixXd x, xt;
  std::vector<int> y, yt;
  synthetic(400, 1, x, y, b);
  synthetic(200, 2, xt, yt, b);
  const auto model = train_gpumemnet(x, y, b, "mlp", small_config());
  ASSERT_EQ(model.members.size(), 2u);
  const auto s = score_classification(yt, model.predict(xt));
  EXPECT_GT(s.accuracy, 0.9);
  const auto cv1 = cross_validate(x, y, b, "mlp", small_config(), 3);
  const auto cv2 = cross_validate(x, y, b, "mlp", small_config(), 3);
  ASSERT_EQ(cv1.size(), 3u);
  for (int f = 0; f < 3; ++f) {
    EXPECT_EQ(cv1[f].accuracy, cv2[f].accuracy);
    EXPECT_GT(cv1[f].accuracy, 0.8);
  }
}

TEST(GpuMemNetTraining, FoldsPartitionTheRowsEvenly) {
  const auto fold = kfold_assignment(103, 5, 9);
  std::vector<int> count(5, 0);
  for (int f : fold) ++count[f];
  for (int c : count) EXPECT_TRUE(c == 20 || c == 21);
  EXPECT_EQ(fold, kfold_assignment(103, 5, 9));
  EXPECT_NE(fold, kfold_assignment(103, 5, 10));
  EXPECT_THROW(kfold_assignment(3, 5, 1), UserError);
}

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("colo_gpumemnet_" + name)).string();
}

std::string load_error(const std::string& path) {
  try {
    GpuMemNetModel::load(path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(GpuMemNetModelFile, RoundTripKeepsEveryPrediction) {
  MemoryBuckets b{1024, 8192};
  Eigen::MatrixXd x;
  std::vector<int> y;
  synthetic(100, 3, x, y, b);
  auto c = small_config();
  c.adam.epochs = 5;
  auto model = train_gpumemnet(x, y, b, "mlp", c);
  model.provenance = {{"command", "test"}};
  const std::string path = temp("roundtrip.json");
  model.save(path);
  const auto back = GpuMemNetModel::load(path);
  EXPECT_EQ(back.kind, "mlp");
  EXPECT_EQ(back.buckets.width_mib, 1024);
  EXPECT_EQ(back.provenance["command"], "test");
  EXPECT_EQ(back.predict_proba(x), model.predict_proba(x));  // bit-identical
}

TEST(GpuMemNetModelFile, MissingOrCorruptFilesGiveOneLineErrorsNamingThem) {
  EXPECT_EQ(load_error("/nonexistent/m.json"), "/nonexistent/m.json: cannot open GPUMemNet model file");

  const std::string bad_json = temp("corrupt.json");
  std::ofstream(bad_json) << "{\"format\": \"colo-gpumemnet\", \"members\": [";
  const auto e1 = load_error(bad_json);
  EXPECT_EQ(e1.rfind(bad_json + ": corrupt GPUMemNet model file", 0), 0u) << e1;
  EXPECT_EQ(e1.find('\n'), std::string::npos);

  MemoryBuckets b{1024, 4096};
  Eigen::MatrixXd x;
  std::vector<int> y;
  synthetic(40, 4, x, y, b);
  auto c = small_config();
  c.adam.epochs = 1;
  const auto j = train_gpumemnet(x, y, b, "mlp", c).to_json();
  auto expect_error = [&](nlohmann::json broken, const std::string& needle) {
    const std::string p = temp("broken.json");
    std::ofstream(p) << broken.dump();
    const auto e = load_error(p);
    EXPECT_EQ(e.rfind(p + ": ", 0), 0u) << e;
    EXPECT_NE(e.find(needle), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  };
  auto k = j;
  k["format"] = "other";
  expect_error(k, "not a GPUMemNet model file");
  k = j;
  k["features"][0] = "something_else";
  expect_error(k, "other features");
  k = j;
  k["classes"] = 3;
  expect_error(k, "classes but buckets imply");
  k = j;
  k["members"][0]["layers"][0]["bias"].erase(0);
  expect_error(k, "member 0: layer 0 declares");
  k = j;
  k.erase("mean");
  expect_error(k, "malformed model file");
  k = j;
  k["members"] = nlohmann::json::array();
  expect_error(k, "no ensemble members");
}

}  // namespace
}  // namespace colo::estimate
