// `colo estimate smact` end to end through the colo binary: a prediction inside the model's
// training domain, an honest "unknown" outside it, the held-out score, and one-line errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_run.h"

namespace colo::sim::test {
namespace {

const std::string kData = std::string(COLO_SOURCE_DIR) + "/data/";

TEST(CliSmact, PredictsInsideTheTrainingDomainAndSaysUnknownOutsideIt) {
  auto r = run_colo_args("estimate smact --summary " + kData + "carma/summaries/resnet18_cifar100.model --batch 64 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j["smact"].is_number()) << r.out;
  EXPECT_GT(j["smact"].get<double>(), 0.0);
  EXPECT_LE(j["smact"].get<double>(), 1.0);
  EXPECT_EQ(j["model"], "cnn");
  // BERT has far more linear layers than any GPUMemNet MLP: no number is made up.
  r = run_colo_args("estimate smact --summary " + kData + "carma/summaries/BERT_base.model --batch 32 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["smact"].is_null()) << r.out;
  EXPECT_NE(j["unknown_because"].get<std::string>().find("outside the model's training data: linear at"), std::string::npos);
  // VGG-16: three linear layers where every GPUMemNet CNN had one.
  r = run_colo_args("estimate smact --summary " + kData + "carma/summaries/vgg_32.model --batch 32 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["smact"].is_null()) << r.out;
  EXPECT_NE(j["unknown_because"].get<std::string>().find("linear = 3"), std::string::npos) << r.out;
}

TEST(CliSmact, HeldOutScoreMeetsTheGoal) {
  const auto r = run_colo_args("estimate smact eval --dataset " + kData + "gpumemnet/mlp.csv --format gpumemnet-mlp --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["split"], "test");
  EXPECT_GT(j["rows"].get<int>(), 300);
  EXPECT_LE(j["smact_median_abs_err"].get<double>(), 0.05);
}

TEST(CliSmact, BadRequestsGetOneLineErrors) {
  auto r = run_colo_args("estimate smact --batch 8");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "colo: error: estimate smact: --summary FILE is required (or use `smact fit` / `smact eval`)\n");
  r = run_colo_args("estimate smact --summary " + kData + "carma/summaries/resnet18_cifar100.model");
  EXPECT_EQ(r.out, "colo: error: estimate smact: --batch N is required\n");
  r = run_colo_args("estimate smact --summary " + kData + "carma/summaries/resnet18_cifar100.model --batch 8 --model /nonexistent.json");
  EXPECT_EQ(r.out, "colo: error: /nonexistent.json: no such activity model file\n");
  r = run_colo_args("estimate smact eval --dataset " + kData + "gpumemnet/mlp.csv --format keras");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("keras"), std::string::npos) << r.out;
  // The prediction's options before `eval` or `fit` are refused, not ignored (`--model F eval`
  // scored the shipped model).
  r = run_colo_args("estimate smact --model /nonexistent.json eval --dataset " + kData + "gpumemnet/mlp.csv --format gpumemnet-mlp");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "colo: error: estimate smact eval: --model before `eval` is the prediction's option; give eval's own "
                   "options after `eval`\n");
  r = run_colo_args("estimate smact --json fit --cnn a --mlp b --out c");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--json before `fit`"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace colo::sim::test
