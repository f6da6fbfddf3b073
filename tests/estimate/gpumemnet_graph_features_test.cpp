// The estimator computes features from a parsed model graph, training read them off the CSV
// columns: both paths must agree on every row of the shared datasets, or the estimator would feed
// its classifiers numbers they never saw in training.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "estimate/evaluation/dataset.h"
#include "estimate/gpumemnet/gpumemnet_dataset.h"

namespace colo::estimate {
namespace {

void expect_same_features(const std::string& file, GpuMemNetFamily family, DatasetFormat format) {
  const std::string path = std::string(COLO_SOURCE_DIR) + "/data/gpumemnet/" + file;
  const auto mine = load_gpumemnet_dataset(path, family);
  std::map<std::string, const GpuMemNetRow*> by_name;
  for (const auto& r : mine.rows) by_name[r.filename] = &r;
  std::size_t compared = 0;
  for (const auto& row : load_dataset(path, format, Split::All)) {
    const auto it = by_name.find(row.id);
    if (it == by_name.end()) continue;  // a row the GPUMemNet reader skips (no layers / unmeasured)
    const GpuMemNetInputs a = it->second->inputs;
    const GpuMemNetInputs b = gpumemnet_inputs(*row.graph, row.batch);
    ASSERT_EQ(a.linear, b.linear) << row.location;
    ASSERT_EQ(a.conv, b.conv) << row.location;
    ASSERT_EQ(a.batchnorm, b.batchnorm) << row.location;
    ASSERT_EQ(a.dropout, b.dropout) << row.location;
    ASSERT_EQ(a.depth, b.depth) << row.location;
    ASSERT_EQ(a.batch, b.batch) << row.location;
    ASSERT_EQ(a.params, b.params) << row.location;
    ASSERT_EQ(a.activations, b.activations) << row.location;
    ASSERT_EQ(a.activation, b.activation) << row.location;
    ++compared;
  }
  EXPECT_EQ(compared, mine.rows.size());
}

TEST(GpuMemNetGraphFeatures, MlpRowsAgreeWithTheCsvColumns) {
  expect_same_features("mlp.csv", GpuMemNetFamily::MLP, DatasetFormat::GpuMemNetMLP);
}

TEST(GpuMemNetGraphFeatures, CnnRowsAgreeWithTheCsvColumns) {
  expect_same_features("cnn.csv", GpuMemNetFamily::CNN, DatasetFormat::GpuMemNetCNN);
}

}  // namespace
}  // namespace colo::estimate
