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
  j = good;
  j["fitted_rows"] = 2.5;
  EXPECT_EQ(error_for(j), "m.json: 'fitted_rows' must be a whole number");
  j = good;
  j["feature_scale"][2] = 1e-300;  // σ with 300 digits
  EXPECT_EQ(error_for(j), "m.json: feature_scale must be ≥ 1e-12");
  j = good;
  j["feature_constant"] = {true};
  EXPECT_THAT(error_for(j), HasSubstr("'feature_constant' must be an array of 11 true/false values"));
  // The file's own fields of the wrong type: one line, not the JSON library's type error.
  auto models_error_for = [](const std::string& text) -> std::string {
    try {
      ActivityModels::from_json(nlohmann::json::parse(text), "m.json");
    } catch (const UserError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_THAT(models_error_for(R"({"format": 5})"), HasSubstr("m.json: not a colo activity model"));
  EXPECT_EQ(models_error_for(R"({"format": "colo-activity-model 1", "source": 5})"), "m.json: 'source' must be text");
  // A field the reader does not know, or one given twice (the JSON library kept the last): refused.
  EXPECT_EQ(models_error_for(R"({"format": "colo-activity-model 1", "mlp": {}, "cnn": {}, "extra": 1})"),
            "m.json: unknown field 'extra'");
  {
    nlohmann::json with_extra = good;
    with_extra["lamda"] = 1.0;
    EXPECT_EQ(error_for(with_extra), "m.json: unknown field 'lamda'");
  }
  const std::string twice = testing::TempDir() + "twice_activity_model.json";
  std::ofstream(twice) << R"({"format": "colo-activity-model 1", "format": "colo-activity-model 1"})";
  try {
    load_activity_models(twice);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), twice + ": field 'format' given twice");
  }
  EXPECT_THROW(load_activity_models("/nonexistent/model.json"), UserError);
  const std::string overflow = testing::TempDir() + "overflow_activity_model.json";
  std::ofstream(overflow) << R"({"format": "colo-activity-model 1", "lambda": 1e400})";
  try {
    load_activity_models(overflow);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), overflow + ": not a usable model: a number in it is out of range");
  }
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
  EXPECT_EQ(shipped.cnn.to_json().at("feature_constant"), cnn.to_json().at("feature_constant"));
}

// A feature every training row shared (every GPUMemNet CNN has exactly one linear layer) has no
// spread to measure σ by: any other value is outside the domain, however close (VGG-16's three
// linear layers were "in domain" at SMACT 1.00, its depth feature extrapolated).
TEST(ActivityModel, AValueNoTrainingRowHadForAConstantFeatureIsOutsideTheDomain) {
  const ActivityModel cnn = ActivityModel::fit(split_rows(GpuMemNetFamily::CNN, true), GpuMemNetFamily::CNN);
  ASSERT_EQ(cnn.to_json().at("feature_constant")[0], true) << "every CNN train row has one linear layer";
  GpuMemNetInputs in = split_rows(GpuMemNetFamily::CNN, true).front().inputs;
  ASSERT_TRUE(cnn.predict(in).in_domain);
  in.linear = 3;
  in.depth += 2;
  const auto p = cnn.predict(in);
  EXPECT_FALSE(p.in_domain);
  EXPECT_THAT(p.outside, HasSubstr("linear = 3, while every one of the"));
  EXPECT_THAT(p.outside, HasSubstr("cnn training rows had 1"));
  // A file written before colo recorded constant features still loads (no such check then).
  nlohmann::json old = cnn.to_json();
  old.erase("feature_constant");
  EXPECT_TRUE(ActivityModel::from_json(old, "old.json").predict(in).in_domain);
}

}  // namespace
}  // namespace colo::estimate
