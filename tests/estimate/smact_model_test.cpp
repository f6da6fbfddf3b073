// Utilisation estimation (issue 14 item 3): the SMACT/SMOCC model fitted on the GPUMemNet train
// split and scored on the held-out rows, its file format, and the shipped model file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "estimate/evaluation/dataset.h"
#include "estimate/utilisation/smact_model.h"

namespace colo::estimate {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::vector<GpuMemNetRow> split_rows(GpuMemNetFamily f, bool train) {
  const std::string path = std::string(COLO_SOURCE_DIR) + "/data/gpumemnet/" + (f == GpuMemNetFamily::CNN ? "cnn.csv" : "mlp.csv");
  std::vector<GpuMemNetRow> out;
  for (auto& r : load_gpumemnet_dataset(path, f).rows)
    if (in_train_split(r.filename) == train) out.push_back(std::move(r));
  return out;
}

TEST(ActivityModel, ReadsTheMeasuredActivityColumns) {
  const auto rows = split_rows(GpuMemNetFamily::CNN, true);
  int labelled = 0;
  for (const auto& r : rows) {
    if (r.smact) {
      EXPECT_GE(*r.smact, 0);
      EXPECT_LE(*r.smact, 1);
    }
    labelled += has_activity_label(r);
  }
  EXPECT_GT(labelled, 300);  // of ~1 100 train rows, the sampler measured ~40 % of the successful runs
}

// The goal (issue 14): median absolute SMACT error ≤ 0.05 on rows the model never saw.
TEST(ActivityModel, HeldOutMedianErrorIsWithinTheGoalForBothFamilies) {
  for (GpuMemNetFamily f : {GpuMemNetFamily::MLP, GpuMemNetFamily::CNN}) {
    const ActivityModel m = ActivityModel::fit(split_rows(f, true), f);
    const ActivityScore s = score_activity(m, split_rows(f, false));
    EXPECT_GT(s.rows, 80) << to_string(f);
    EXPECT_LE(s.smact_median_abs_err, 0.05) << to_string(f);
    EXPECT_LE(s.smocc_median_abs_err, 0.05) << to_string(f);
    // Much better than predicting the train median for everyone.
    EXPECT_LT(s.smact_median_abs_err, 0.5 * 0.11) << to_string(f);
  }
}

TEST(ActivityModel, RoundTripsThroughItsFileAndPredictsTheSame) {
  ActivityModels m;
  m.mlp = ActivityModel::fit(split_rows(GpuMemNetFamily::MLP, true), GpuMemNetFamily::MLP);
  m.cnn = ActivityModel::fit(split_rows(GpuMemNetFamily::CNN, true), GpuMemNetFamily::CNN);
  m.source = "test";
  const auto back = ActivityModels::from_json(nlohmann::json::parse(m.to_json().dump()), "mem");
  for (const auto& r : split_rows(GpuMemNetFamily::CNN, false)) {
    EXPECT_DOUBLE_EQ(back.for_inputs(r.inputs).predict(r.inputs).smact, m.cnn.predict(r.inputs).smact);
    EXPECT_EQ(&back.for_inputs(r.inputs), &back.cnn);
  }
}

TEST(ActivityModel, PredictionsStayInRangeFarOutsideTheTrainingData) {
  const ActivityModel m = ActivityModel::fit(split_rows(GpuMemNetFamily::MLP, true), GpuMemNetFamily::MLP);
  GpuMemNetInputs huge;
  huge.linear = 5000;
  huge.depth = 5000;
  huge.batch = 1 << 20;
  huge.params = std::int64_t{1} << 50;
  huge.activations = std::int64_t{1} << 50;
  huge.activation = "relu";
  const auto p = m.predict(huge);
  EXPECT_GE(p.smact, 0);
  EXPECT_LE(p.smact, 1);
  EXPECT_TRUE(std::isfinite(p.smocc));
}

TEST(ActivityModel, BadModelFilesAndTooFewRowsAreClearErrors) {
  EXPECT_THROW(ActivityModel::fit({}, GpuMemNetFamily::MLP), UserError);
  try {
    ActivityModels::from_json(nlohmann::json::parse(R"({"format":"colo-activity-model 1","mlp":{}})"), "m.json");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("m.json: needs both"));
  }
  try {
    ActivityModels::from_json(nlohmann::json::parse(R"({"format":"something else"})"), "m.json");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("not a colo activity model"));
  }
  auto j = ActivityModel::fit(split_rows(GpuMemNetFamily::MLP, true), GpuMemNetFamily::MLP).to_json();
  j["w_smact"] = std::vector<double>{1, 2};
  try {
    ActivityModel::from_json(j, "m.json");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("'w_smact' has 2 values"));
  }
  // Values no fit produces are refused by name, not turned into SMACT 1.00 or a library message.
  auto error_for = [](const nlohmann::json& m) -> std::string {
    try {
      ActivityModel::from_json(m, "m.json");
    } catch (const UserError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  const auto good = ActivityModel::fit(split_rows(GpuMemNetFamily::MLP, true), GpuMemNetFamily::MLP).to_json();
  EXPECT_EQ(error_for(good), "(accepted)");
  j = good;
  j["w_smact"][3] = 1e308;
  EXPECT_THAT(error_for(j), HasSubstr("m.json: 'w_smact' holds 1e+308"));
  j = good;
  j["lambda"] = -1;
  EXPECT_EQ(error_for(j), "m.json: 'lambda' must be a number in [0, 1e+06]");
  j = good;
  j["fitted_rows"] = -5;
  EXPECT_EQ(error_for(j), "m.json: 'fitted_rows' must be a number in [1, 1e+09]");
  j = good;
  j["w_smocc"][0] = "x";
  EXPECT_EQ(error_for(j), "m.json: 'w_smocc' must be an array of numbers");
  EXPECT_THROW(load_activity_models("/nonexistent/model.json"), UserError);
  const std::string bad = testing::TempDir() + "bad_activity_model.json";
  std::ofstream(bad) << "{\"format\": ";
  try {
    load_activity_models(bad);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("not JSON (syntax error at byte"));
    EXPECT_THAT(e.what(), Not(HasSubstr("json.exception")));
  }
}

// The shipped model file is what `colo estimate smact fit` writes from the repository's data.
TEST(ActivityModel, TheShippedModelIsTheFitOfTheTrainSplit) {
  const ActivityModels shipped = load_activity_models(std::string(COLO_SOURCE_DIR) + "/models/smact/a100-gpumemnet.json");
  const ActivityModel cnn = ActivityModel::fit(split_rows(GpuMemNetFamily::CNN, true), GpuMemNetFamily::CNN);
  EXPECT_EQ(shipped.cnn.fitted_rows(), cnn.fitted_rows());
  EXPECT_EQ(shipped.cnn.lambda(), cnn.lambda());
  for (const auto& r : split_rows(GpuMemNetFamily::CNN, false))
    EXPECT_NEAR(shipped.cnn.predict(r.inputs).smact, cnn.predict(r.inputs).smact, 1e-9);
}

}  // namespace
}  // namespace colo::estimate
