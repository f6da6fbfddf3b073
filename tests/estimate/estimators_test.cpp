// Estimators, the training-trace synthesis, evaluation metrics and the calibration fit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/error.h"
#include "estimate/allocator/allocsim.h"
#include "estimate/calibration/calibration_fit.h"
#include "estimate/evaluation/dataset.h"
#include "estimate/estimator.h"
#include "estimate/evaluation/evaluation.h"
#include "estimate/graph/parsers.h"
#include "estimate/allocator/training_trace.h"

namespace colo::estimate {
namespace {

namespace fs = std::filesystem;
const std::string kData = std::string(COLO_SOURCE_DIR) + "/data/";

// A profile written to a private directory and selected through $COLO_CALIBRATION_DIR.
class ProfileDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("colo_est_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    CalibrationProfile p;
    p.gpu = "testgpu";
    p.gpu_total_mib = 80000;
    p.context_mib = 100;
    p.cublas_workspace_mib = 0;
    write(p);
    ::setenv("COLO_CALIBRATION_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("COLO_CALIBRATION_DIR");
    fs::remove_all(dir_);
  }
  void write(const CalibrationProfile& p) { std::ofstream(dir_ / (p.gpu + ".json")) << p.to_json(); }
  fs::path dir_;
};

// input 256 floats -> Linear(256, 256) -> ReLU -> Linear(256, 10)
ModelGraph tiny_mlp() {
  ModelGraph g;
  g.input_shape = {256};
  Layer a;
  a.kind = LayerKind::Linear;
  a.type_name = "Linear";
  a.out_shape = {256};
  a.params = 256 * 256 + 256;
  a.in_features = 256;
  a.out_features = 256;
  Layer r;
  r.kind = LayerKind::ReLU;
  r.type_name = "ReLU";
  r.out_shape = {256};
  Layer b = a;
  b.out_shape = {10};
  b.params = 256 * 10 + 10;
  b.out_features = 10;
  g.layers = {a, r, b};
  g.finalize();
  return g;
}

TEST(TrainingTrace, EveryFreeMatchesALiveMallocAndIterationsReachASteadyState) {
  const auto g = load_summary(kData + "carma/summaries/resnet50_32.model");
  TraceOptions o;
  o.batch = 4;
  o.optimizer = Optimizer::Adam;
  o.iterations = 3;
  const auto trace = synthesize_training_trace(g, o);
  std::set<std::uint32_t> live;
  std::uint64_t bytes = 0;
  std::map<std::uint32_t, std::uint64_t> size;
  for (const auto& e : trace) {
    if (e.op == AllocEvent::Op::Malloc) {
      ASSERT_TRUE(live.insert(e.id).second) << "id reused while live: " << e.id;
      size[e.id] = e.bytes;
      bytes += e.bytes;
    } else {
      ASSERT_EQ(live.erase(e.id), 1u) << "free of a tensor that is not live: " << e.id;
      bytes -= size[e.id];
    }
  }
  // What stays after the last iteration: parameters + BN buffers + 2 Adam states per parameter
  // tensor (+ the cuBLAS workspace, 0 here) = 3 x params + buffers.
  const std::uint64_t params = static_cast<std::uint64_t>(g.total_params()) * 4;
  EXPECT_GE(bytes, 3 * params);
  EXPECT_LT(bytes, 3 * params + 2 * 1048576);
}

TEST_F(ProfileDir, AllocsimGrowsWithBatchAndOptimizerState) {
  const auto g = load_summary(kData + "carma/summaries/resnet50_32.model");
  auto est = make_estimator("allocsim");
  EstimateRequest r;
  r.gpu = "testgpu";
  r.graph = &g;
  r.optimizer = Optimizer::SGD;
  r.batch = 8;
  const auto sgd8 = est->estimate(r).mib;
  r.optimizer = Optimizer::Adam;
  const auto adam8 = est->estimate(r).mib;
  r.batch = 16;
  const auto adam16 = est->estimate(r).mib;
  // Adam keeps two parameter-sized states: at least 2 x 97.5 MiB more than SGD.
  EXPECT_GE(adam8 - sgd8, 190);
  EXPECT_GT(adam16, adam8 + 200);  // activations scale with the batch
  EXPECT_GT(sgd8, 100 + 97);       // context + the parameters at least
  const auto e = est->estimate(r);
  EXPECT_EQ(e.estimator, "allocsim");
  EXPECT_THAT(e.explanation, ::testing::HasSubstr("context 100 MiB"));
}

TEST_F(ProfileDir, AllocsimOfATinyMlpIsContextPlusOneSmallSegment) {
  // Every tensor is <= 1 MiB, so all live in the small pool's 2 MiB segments. Rounded to 512 B:
  // parameters W1 262,144 + b1 1,024 + W2 10,240 + b2 512 = 273,920 B. At the Adam step the
  // live set is params + grads + 2 states + 1 foreach temporary = 5 x 273,920 = 1,369,600 B
  // (1.31 MiB) plus a few 512 B activations/batch tensors: one 2 MiB segment. 100 + 2 = 102.
  const auto g = tiny_mlp();
  EstimateRequest r;
  r.gpu = "testgpu";
  r.graph = &g;
  r.batch = 1;
  r.optimizer = Optimizer::Adam;
  EXPECT_EQ(make_estimator("allocsim")->estimate(r).mib, 102);
  // Adadelta keeps 2 states but needs 2 temporaries: 6 x 273,920 = 1.57 MiB, still one segment.
  r.optimizer = Optimizer::Adadelta;
  EXPECT_EQ(make_estimator("allocsim")->estimate(r).mib, 102);
  // Batch 600: ReLU/Linear activations 600 x 1 KiB = 600 KiB each, several alive at once next to
  // the 1.31 MiB of parameter-sized tensors: no longer fits one segment.
  r.optimizer = Optimizer::Adam;
  r.batch = 600;
  EXPECT_GE(make_estimator("allocsim")->estimate(r).mib, 104);
}

TEST_F(ProfileDir, AllocsimFlagsModelsThatDoNotFit) {
  const auto g = load_summary(kData + "carma/summaries/vgg_32.model");
  EstimateRequest r;
  CalibrationProfile small;
  small.gpu = "smallgpu";
  small.gpu_total_mib = 1000;
  small.context_mib = 100;
  write(small);
  r.gpu = "smallgpu";
  r.graph = &g;
  r.batch = 32;
  const auto e = make_estimator("allocsim")->estimate(r);
  EXPECT_GT(e.mib, 1000);
  EXPECT_THAT(e.explanation, ::testing::HasSubstr("does not fit"));
  // Beyond the GPU the figure is the job's need (the replay without the limit), not the peak where
  // the replay ran out: a larger batch never gets a smaller figure, and a GPU the job fits gives the
  // same need (VGG-16 at batch 32: ~2 GB, on the 1 000 MiB GPU and on a 40 000 MiB one).
  r.batch = 64;
  EXPECT_GT(make_estimator("allocsim")->estimate(r).mib, e.mib);
  r.batch = 32;
  small.gpu = "biggpu";
  small.gpu_total_mib = 40000;
  write(small);
  r.gpu = "biggpu";
  const auto fits = make_estimator("allocsim")->estimate(r);
  EXPECT_THAT(fits.explanation, ::testing::Not(::testing::HasSubstr("does not fit")));
  const auto peak_of = [](const std::string& x) { return std::stod(x.substr(x.find("peak reserved ") + 14)); };
  EXPECT_DOUBLE_EQ(peak_of(e.explanation), peak_of(fits.explanation)) << e.explanation << "\n" << fits.explanation;
}

TEST_F(ProfileDir, HorusIsItsFormula) {
  const auto g = tiny_mlp();
  EstimateRequest r;
  r.gpu = "testgpu";
  r.graph = &g;
  r.batch = 1000;
  // A = (256 + 256 + 10) floats = 2088 B/sample; P = 68,362 params = 273,448 B.
  // (1000*2088 + 273448) + 1000*2088 = 4,449,448 B = 4.243 MiB; + d = 100 -> ceil = 105.
  EXPECT_EQ(make_estimator("horus")->estimate(r).mib, 105);
}

TEST_F(ProfileDir, OracleAndAutoAndErrors) {
  EstimateRequest r;
  r.gpu = "testgpu";
  r.batch = 8;
  EXPECT_THROW(make_estimator("oracle")->estimate(r), UserError);
  r.stated_mib = 4321;
  EXPECT_EQ(make_estimator("oracle")->estimate(r).mib, 4321);
  const auto a = make_estimator("auto")->estimate(r);
  EXPECT_EQ(a.mib, 4321);
  EXPECT_EQ(a.estimator, "auto(oracle)");
  r.stated_mib.reset();
  EXPECT_THROW(make_estimator("auto")->estimate(r), UserError);
  const auto g = tiny_mlp();
  r.graph = &g;
  EXPECT_EQ(make_estimator("auto")->estimate(r).estimator, "auto(allocsim)");
  r.batch = 0;
  EXPECT_THROW(make_estimator("allocsim")->estimate(r), UserError);
  EXPECT_THROW(make_estimator("nonsense"), UserError);
  r.batch = 1;
  r.gpu = "no-such-gpu";
  EXPECT_THROW(make_estimator("allocsim")->estimate(r), UserError);
}

TEST_F(ProfileDir, EstimateFromSummaryValidatesInput) {
  const std::string s = kData + "carma/summaries/mnist_cnn_64.model";
  const auto e = estimate_from_summary(s, 64, "adadelta", "allocsim", 0, "testgpu");
  EXPECT_GT(e.mib, 100);
  EXPECT_THROW(estimate_from_summary(s, 0, "adam", "allocsim", 0, "testgpu"), UserError);
  EXPECT_THROW(estimate_from_summary(s, 8, "lion", "allocsim", 0, "testgpu"), UserError);
  EXPECT_THROW(estimate_from_summary("/no/such.model", 8, "adam", "allocsim", 0, "testgpu"), UserError);
}

TEST(Optimizer, NamesAndState) {
  EXPECT_EQ(parse_optimizer("AdamW"), Optimizer::AdamW);
  EXPECT_EQ(parse_optimizer("sgd_momentum"), Optimizer::SGDMomentum);
  EXPECT_EQ(state_tensors_per_param(Optimizer::SGD), 0);
  EXPECT_EQ(state_tensors_per_param(Optimizer::Adadelta), 2);
  EXPECT_THROW(parse_optimizer("lion"), UserError);
}

TEST(Evaluation, MetricsOnHandWorkedRows) {
  std::vector<EvalRow> rows = {
      {"a", 1000, false, 1100, ""},   // +10 %
      {"b", 2000, false, 1800, ""},   // -10 %, under
      {"c", 4000, false, 4000, ""},   // 0 %
      {"d", 1000, false, 1500, ""},   // +50 %
      {"e", 39000, true, 41000, ""},  // OOM row, predicted (> 40960)
      {"f", 39000, true, 30000, ""},  // OOM row, missed
      {"g", std::nullopt, false, 5, ""},
  };
  const auto s = summarize(rows, 40960);
  EXPECT_EQ(s.n, 4u);
  EXPECT_NEAR(s.median_abs_rel_err, 0.10, 1e-12);  // |err| = {0, .1, .1, .5}
  EXPECT_NEAR(s.max_abs_rel_err, 0.5, 1e-12);
  EXPECT_NEAR(s.p90_abs_rel_err, 0.1 + 0.7 * 0.4, 1e-12);  // linear interpolation at 2.7 of 0..3
  EXPECT_NEAR(s.under_rate, 0.25, 1e-12);
  EXPECT_NEAR(s.bucket_acc_1gib, 0.5, 1e-12);  // a: 0 vs 1 (1100 > 1024) no; b: 1 vs 1; c: 3 vs 3; d: 0 vs 1
  EXPECT_EQ(s.oom_rows, 2u);
  EXPECT_EQ(s.oom_predicted, 1u);
  EXPECT_EQ(s.skipped, 1u);
}

TEST(Dataset, SplitIsDeterministicAndCarmaResolvesSummaries) {
  EXPECT_EQ(in_train_split("x.out"), in_train_split("x.out"));
  const auto train = load_dataset(kData + "gpumemnet/mlp.csv", DatasetFormat::GpuMemNetMLP, Split::Train);
  const auto test = load_dataset(kData + "gpumemnet/mlp.csv", DatasetFormat::GpuMemNetMLP, Split::Test);
  EXPECT_EQ(train.size() + test.size(), 2100u);
  EXPECT_NEAR(static_cast<double>(train.size()) / 2100.0, 0.8, 0.03);
  const auto carma = load_dataset(kData + "carma/workloads.csv", DatasetFormat::CarmaWorkloads, Split::All);
  EXPECT_EQ(carma.size(), 49u);
  std::size_t measured = 0;
  for (const auto& r : carma) measured += r.measured.has_value();
  EXPECT_EQ(measured, 48u);
  EXPECT_THROW(load_dataset(kData + "carma/workloads.csv", DatasetFormat::CarmaWorkloads, Split::Train), UserError);
}

TEST(Dataset, MalformedCsvNamesFileAndLine) {
  const auto p = fs::temp_directory_path() / ("colo_bad_" + std::to_string(::getpid()) + ".csv");
  std::ofstream(p) << "Filename,Activations-Params,Batch Size,Max GPU Memory (MiB)\n"
                      "input:4_output:2_depth:1_arch:u_batch:2_act:relu.out,\"[('linear', 2, 10)]\",2,1500\n"
                      "input:4_output:2_depth:1_arch:u_batch:2_act:relu.out,\"[('linear', 2, 10)]\",two,1500\n";
  try {
    load_dataset(p.string(), DatasetFormat::GpuMemNetMLP, Split::All);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), ::testing::StartsWith(p.string() + ":3: column 'Batch Size': 'two' is not a number"));
  }
  fs::remove(p);
}

// Every field a GPUMemNet filename states is checked, and must agree with the row's columns.
TEST(Dataset, FilenameFieldsAreCheckedAgainstSenseAndTheColumns) {
  const auto p = fs::temp_directory_path() / ("colo_fn_" + std::to_string(::getpid()) + ".csv");
  auto error_for = [&](const std::string& filename, int batch) -> std::string {
    std::ofstream(p) << "Filename,Activations-Params,Batch Size,Max GPU Memory (MiB)\n"
                     << filename << ",\"[('linear', 2, 10)]\"," << batch << ",1500\n";
    try {
      load_dataset(p.string(), DatasetFormat::GpuMemNetMLP, Split::All);
    } catch (const UserError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  const std::string where = p.string() + ":2: ";
  EXPECT_EQ(error_for("input:4_output:2_depth:1_arch:u_batch:2_act:relu.out", 2), "(accepted)");
  EXPECT_EQ(error_for("input:4_output:2_depth:1_arch:u_batch:2_act:relu.out", 3),
            where + "column 'Batch Size' is 3 but the filename says 'batch:2'");
  EXPECT_THAT(error_for("input:4_output:2_depth:1_arch:u_batch:2_act:bogus.out", 2),
              ::testing::HasSubstr("filename field 'act:bogus'"));
  EXPECT_THAT(error_for("input:4_output:2_depth:1_arch:u_batch:2_act:relu_dropout:2.5.out", 2),
              ::testing::HasSubstr("filename field 'dropout:2.5': a rate in [0, 1] or True/False"));
  EXPECT_THAT(error_for("input:4_output:0_depth:1_arch:u_batch:2_act:relu.out", 2),
              ::testing::HasSubstr("filename field 'output:0' must be at least 1"));
  EXPECT_THAT(error_for("input:4_input:5_output:2_depth:1_arch:u_batch:2_act:relu.out", 2),
              ::testing::HasSubstr("filename field 'input:' appears 2 times"));
  fs::remove(p);
}

// Each row is one measured model: a repeat would count twice in every figure.
TEST(Dataset, ARepeatedRowIsAnError) {
  const auto p = fs::temp_directory_path() / ("colo_repeat_" + std::to_string(::getpid()) + ".csv");
  const std::string row = "input:4_output:2_depth:1_arch:u_batch:2_act:relu.out,\"[('linear', 2, 10)]\",2,1500\n";
  std::ofstream(p) << "Filename,Activations-Params,Batch Size,Max GPU Memory (MiB)\n" << row
                   << "input:4_output:2_depth:1_arch:u_batch:4_act:relu.out,\"[('linear', 2, 10)]\",4,1500\n" << row;
  for (Split split : {Split::All, Split::Train, Split::Test}) {  // whichever half the rows are in
    try {
      load_dataset(p.string(), DatasetFormat::GpuMemNetMLP, split);
      FAIL();
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), p.string() + ":4: column 'Filename': 'input:4_output:2_depth:1_arch:u_batch:2_act:relu.out' "
                                                    "repeats the row at " + p.string() + ":2");
    }
  }
  fs::remove(p);
  // The carma workloads: a workload name twice.
  const auto dir = fs::temp_directory_path() / ("colo_repeat_carma_" + std::to_string(::getpid()));
  fs::create_directories(dir / "summaries");
  fs::copy_file(kData + "carma/summaries/resnet50_128.model", dir / "summaries" / "r.model");
  const std::string w = "r50,resnet50,imagenet,32,1,1,10,9000,,,,r.model,t,sgd,\n";
  std::ofstream(dir / "workloads.csv") << "workload,model,dataset,batch_size,gpus,epochs,epoch_minutes,measured_mib,horus_mib,"
                                          "faketensor_mib,gpumemnet_mib,summary,source,optimizer,seq_len\n" << w << w;
  try {
    load_dataset((dir / "workloads.csv").string(), DatasetFormat::CarmaWorkloads, Split::All);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("workloads.csv:3: column 'workload': 'r50' repeats the row at "));
  }
  fs::remove_all(dir);
}

// A Status other than the data set's two values is an error, not a successful run.
TEST(Dataset, UnknownStatusNamesFileAndLine) {
  const auto p = fs::temp_directory_path() / ("colo_status_" + std::to_string(::getpid()) + ".csv");
  std::ofstream(p) << "Filename,Activations-Params,Batch Size,Max GPU Memory (MiB),Status\n"
                      "input:4_output:2_depth:1_arch:u_batch:2_act:relu.out,\"[('linear', 2, 10)]\",2,1500,SUCCESSFUL\n"
                      "input:4_output:2_depth:1_arch:u_batch:2_act:relu.out,\"[('linear', 2, 10)]\",2,0,oom_crash\n";
  try {
    load_dataset(p.string(), DatasetFormat::GpuMemNetMLP, Split::All);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), p.string() + ":3: column 'Status': 'oom_crash' is neither SUCCESSFUL nor OOM_CRASH");
  }
  fs::remove(p);
}

// A quote left open runs to the end of the file; it is an error at the record's line, not a
// last record swallowing the rest. Text cells must be UTF-8 (they end up in --json output).
TEST(Dataset, UnterminatedQuoteAndInvalidUtf8NameFileAndLine) {
  const auto p = fs::temp_directory_path() / ("colo_bad_quote_" + std::to_string(::getpid()) + ".csv");
  const std::string header = "Filename,Activations-Params,Batch Size,Max GPU Memory (MiB)\n";
  const std::string good = "input:4_output:2_depth:1_arch:u_batch:2_act:relu.out,\"[('linear', 2, 10)]\",2,1500\n";
  auto error_for = [&](const std::string& text) -> std::string {
    std::ofstream(p, std::ios::binary) << text;
    try {
      load_dataset(p.string(), DatasetFormat::GpuMemNetMLP, Split::All);
    } catch (const UserError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_EQ(error_for(header + good + "x.out,\"[('linear', 2, 10)],2,1500\n"), p.string() + ":3: unterminated quote");
  EXPECT_EQ(error_for(header + good + "x\xff\xfe.out,\"[('linear', 2, 10)]\",2,1500\n"),
            p.string() + ":3: column 'Filename': not valid UTF-8");
  EXPECT_EQ(error_for("Filename\xc0,Activations-Params,Batch Size,Max GPU Memory (MiB)\n" + good),
            p.string() + ":1: header column 1: not valid UTF-8");
  EXPECT_EQ(error_for(header + good), "(accepted)");
  fs::remove(p);
}

TEST(Calibration, RecoversAKnownContextFromSyntheticMeasurements) {
  // Measurements made by the model itself with a known context of 777 MiB: the fit must find it
  // (within rounding) and need no margin.
  auto rows = load_dataset(kData + "gpumemnet/mlp.csv", DatasetFormat::GpuMemNetMLP, Split::Train);
  rows.resize(60);
  CalibrationProfile truth;
  truth.context_mib = 777;
  for (auto& r : rows)
    r.measured = static_cast<MiB>(std::ceil(simulate_allocsim(*r.graph, r.batch, Optimizer::Adam, truth).total_mib));
  CalibrationProfile base;
  FitOptions fo;
  fo.cnn = false;
  fo.max_under_rate = 0.0;
  const auto res = fit_profile(rows, base, fo);
  EXPECT_NEAR(res.profile.context_mib, 777, 1.0);
  EXPECT_LE(res.profile.safety_margin, 0.01);
  EXPECT_LE(res.report["chosen"]["median_abs_rel_err"].get<double>(), 0.001);
  EXPECT_THAT(res.inputs_csv, ::testing::StartsWith("id,measured_mib,simulated_reserved_mib\n"));
}

TEST(TrainingTrace, StridedConvsGetTheirOwnWorkspaceRatio) {
  // 4 x 8x8 -> conv 3x3 stride 2 -> 8 x 4x4 -> conv 3x3 stride 1 -> 8 x 4x4.
  ModelGraph g;
  g.input_shape = {4, 8, 8};
  Layer c;
  c.kind = LayerKind::Conv;
  c.type_name = "Conv2d";
  c.out_shape = {8, 4, 4};
  c.params = 4 * 8 * 9;
  c.kernel = 3;
  c.in_features = 4;
  c.out_features = 8;
  Layer d = c;
  d.params = 8 * 8 * 9;
  d.in_features = 8;
  g.layers = {c, d};
  g.finalize();
  EXPECT_TRUE(g.layers[0].strided);
  EXPECT_FALSE(g.layers[1].strided);
  // The largest transient is the strided conv's workspace: ratio x its input (batch 1000:
  // 256 floats x 1000 = 1,024,000 B). 100 x that = 97.7 MiB dominates the 20 MiB segments, so the
  // reserved peak moves with the strided ratio only.
  TraceOptions o;
  o.batch = 1000;
  o.iterations = 1;
  o.conv_workspace_ratio = 1;
  o.strided_conv_workspace_ratio = 100;
  const auto big = replay(synthesize_training_trace(g, o)).reserved_peak;
  o.strided_conv_workspace_ratio = 1;
  const auto same = replay(synthesize_training_trace(g, o)).reserved_peak;
  EXPECT_GE(big, same + 90ull * 1048576);
}

TEST(Calibration, RecoversAKnownStridedConvWorkspaceRatio) {
  // CNN rows (residual blocks downsample with strided convs) measured by the model itself with
  // known workspace ratios: the fit must pick them from its grid.
  auto all = load_dataset(kData + "gpumemnet/cnn.csv", DatasetFormat::GpuMemNetCNN, Split::Train);
  std::vector<DatasetRow> rows;
  for (auto& r : all)
    if (r.graph && !r.oom && rows.size() < 60) rows.push_back(std::move(r));
  CalibrationProfile truth;
  truth.context_mib = 1000;
  truth.cudnn_context_mib = 300;
  truth.conv_workspace_ratio = 1;
  truth.strided_conv_workspace_ratio = 6;
  for (auto& r : rows)
    r.measured = static_cast<MiB>(std::ceil(simulate_allocsim(*r.graph, r.batch, Optimizer::Adam, truth).total_mib));
  CalibrationProfile base;
  base.context_mib = 1000;
  FitOptions fo;
  fo.cnn = true;
  fo.max_under_rate = 0.0;
  fo.conv_workspace_ratio = {0.5, 1, 2};
  fo.strided_conv_workspace_ratio = {1, 6, 10};
  const auto res = fit_profile(rows, base, fo);
  EXPECT_EQ(res.profile.conv_workspace_ratio, 1);
  EXPECT_EQ(res.profile.strided_conv_workspace_ratio, 6);
  EXPECT_NEAR(res.profile.cudnn_context_mib, 300, 1.0);
  EXPECT_LE(res.profile.cudnn_safety_margin, 0.01);
  EXPECT_EQ(res.report["cross_validation"]["cv_under_rate"].get<double>(), 0.0);
}

TEST(Calibration, CommandWritesProfileAndFitFiles) {
  const fs::path colo = fs::path(COLO_BINARY_DIR) / "colo";
  if (!fs::exists(colo)) GTEST_SKIP() << "colo binary not built";
  const auto dir = fs::temp_directory_path() / ("colo_cal_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string cmd = colo.string() + " estimate calibrate --dataset " + kData +
                          "gpumemnet/mlp.csv --format gpumemnet-mlp --split train --gpu t --out " + (dir / "t.json").string() +
                          " > " + (dir / "out.txt").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream f(dir / "t.json");
  std::stringstream ss;
  ss << f.rdbuf();
  const auto p = CalibrationProfile::from_json(ss.str(), "t.json");
  EXPECT_GT(p.context_mib, 1000);  // the MLP runs' CUDA context on an A100 is over a GiB
  EXPECT_LT(p.context_mib, 2000);
  EXPECT_TRUE(fs::exists(dir / "t.fit-gpumemnet-mlp.json"));
  EXPECT_TRUE(fs::exists(dir / "t.fit-gpumemnet-mlp-inputs.csv"));
  // Fitting on the held-out carma workloads is refused.
  const std::string bad = colo.string() + " estimate calibrate --dataset " + kData +
                          "carma/workloads.csv --format carma-workloads --out " + (dir / "u.json").string() + " 2>/dev/null";
  EXPECT_NE(std::system(bad.c_str()), 0);
  // An empty --out is an error, not the shipped profile's path; a profile name is a file name; a
  // missing --out directory is not created; the CNN step needs the MLP step's profile.
  const std::string base = colo.string() + " estimate calibrate --dataset " + kData + "gpumemnet/mlp.csv --format gpumemnet-mlp ";
  auto fails_with = [&](const std::string& args, const std::string& message) {
    const std::string c = base + args + " > " + (dir / "err.txt").string() + " 2>&1";
    EXPECT_NE(std::system(c.c_str()), 0) << args;
    std::ifstream e(dir / "err.txt");
    std::stringstream es;
    es << e.rdbuf();
    EXPECT_NE(es.str().find(message), std::string::npos) << args << ": " << es.str();
  };
  fails_with("--out ''", "--out: empty path");
  // eval: a run in which no row could be estimated is an error, not a perfect score.
  const std::string no_traces = colo.string() + " estimate eval --dataset " + kData +
                                "gpumemnet/mlp.csv --format gpumemnet-mlp --estimator trace > " + (dir / "err.txt").string() +
                                " 2>&1";
  EXPECT_NE(std::system(no_traces.c_str()), 0);
  fails_with("--gpu ../escape --out " + (dir / "v.json").string(), "bad GPU profile name '../escape'");
  fails_with("--out " + (dir / "missing" / "v.json").string(), "does not exist");
  EXPECT_FALSE(fs::exists(dir / "missing"));
  const std::string cnn_first = colo.string() + " estimate calibrate --dataset " + kData +
                                "gpumemnet/cnn.csv --format gpumemnet-cnn --gpu no-such-profile --out " +
                                (dir / "w.json").string() + " 2>/dev/null";
  EXPECT_NE(std::system(cnn_first.c_str()), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace colo::estimate
