// Files read from outside that an independent review (2026-11-26) found crashing (UBSan), silently
// wrong or silently accepted: GPUMemNet rows and model files, calibration profiles, summaries,
// data-set rows, and the trace replay's out-of-memory report. Each must give one line naming
// the problem and where, or the right answer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "estimate/calibration/calibration_profile.h"
#include "estimate/estimator.h"
#include "estimate/evaluation/dataset.h"
#include "estimate/evaluation/evaluation.h"
#include "estimate/gpumemnet/gpumemnet_dataset.h"
#include "estimate/gpumemnet/gpumemnet_model.h"
#include "estimate/graph/parsers.h"
#include "estimate/trace/probe_trace.h"

namespace colo::estimate {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

template <typename F>
std::string error_of_call(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  }
  ADD_FAILURE() << "no error";
  return "";
}

// Fields of one CSV line; the Activations-Params field is quoted and holds commas.
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> fields;
  std::string cur;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    if (c == ',' && !quoted) {
      fields.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  fields.push_back(cur);
  return fields;
}

std::string join_csv(const std::vector<std::string>& f) {
  std::string s;
  for (std::size_t i = 0; i < f.size(); ++i) s += (i ? "," : "") + f[i];
  return s;
}

// `row` with the field under `column` of `header` replaced by `value`.
std::string with_field(const std::string& header, const std::string& row, const std::string& column,
                       const std::string& value) {
  const std::vector<std::string> cols = split_csv(header);
  std::vector<std::string> fields = split_csv(row);
  const auto at = static_cast<std::size_t>(std::find(cols.begin(), cols.end(), column) - cols.begin());
  EXPECT_LT(at, cols.size()) << column;
  EXPECT_EQ(fields.size(), cols.size());
  if (at < fields.size()) fields[at] = value;
  return join_csv(fields);
}

// One directory per test process, removed when it exits (each run left one in /tmp before).
struct ScratchRoot {
  fs::path path = fs::temp_directory_path() / ("colo-input-ranges-" + std::to_string(::getpid()));
  ~ScratchRoot() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

fs::path scratch(const std::string& name) {
  static const ScratchRoot root;
  const fs::path d = root.path / name;
  fs::create_directories(d);
  return d;
}

TEST(GpuMemNetRow, CountsWhoseProductPassesInt64AreRefusedNotOverflowed) {
  // (cin*k*k + 1) * cout with cin and cout recovered from counts near 2^50.
  const std::string ap = "[('conv2d', 1024, 985162418487296), ('batch_norm2d', 1024, 70368744177664), ('conv2d', 1024, 12345)]";
  const std::string msg = error_of_call([&] {
    parse_gpumemnet_row("input_channels:3_input_size:32_batch:4.out", ap, GpuMemNetKind::CNN, "cnn.csv:2");
  });
  EXPECT_THAT(msg, StartsWith("cnn.csv:2: "));
}

TEST(GpuMemNetRow, SizeLimitsNameTheRow) {
  const std::string msg = error_of_call([] {
    parse_gpumemnet_row("input_channels:3_input_size:65536_batch:4.out", "[('conv2d', 1024, 224)]", GpuMemNetKind::CNN,
                        "cnn.csv:7");
  });
  EXPECT_THAT(msg, StartsWith("cnn.csv:7: "));
  EXPECT_THAT(msg, HasSubstr("2^32"));
}

// A copy of the shipped 8 GiB CNN model with one field changed.
std::string gpumemnet_model_error(const std::function<void(nlohmann::json&)>& change) {
  nlohmann::json j = nlohmann::json::parse(read_text(std::string(COLO_SOURCE_DIR) + "/models/gpumemnet/cnn-8gib.json"));
  change(j);
  return error_of_call([&] { GpuMemNetModel::from_json(j, "m.json"); });
}

TEST(GpuMemNetModelFile, OutOfRangeNumbersAreRefused) {
  EXPECT_THAT(gpumemnet_model_error([](nlohmann::json& j) { j["capacity_mib"] = 9223372036854775807LL; }),
              HasSubstr("capacity_mib must be in [1, 2^30]"));
  EXPECT_THAT(gpumemnet_model_error([](nlohmann::json& j) {
                j["members"][0]["layers"][0]["out"] = 4294967296LL;
                j["members"][0]["layers"][0]["in"] = 4294967296LL;
              }),
              HasSubstr("member 0: layer 0 declares 4294967296×4294967296"));
  EXPECT_THAT(gpumemnet_model_error([](nlohmann::json& j) {
                for (auto& m : j["members"])
                  for (auto& w : m["layers"][0]["weight"]) w = 1e308;
              }),
              HasSubstr("beyond ±1e6"));
  EXPECT_THAT(gpumemnet_model_error([](nlohmann::json& j) { j["scale"][0] = 1e-300; }),
              HasSubstr("scale outside [1e-9, 1e9]"));
}

std::string profile_error(const std::string& key, const nlohmann::json& value) {
  nlohmann::json j = nlohmann::json::parse(read_text(std::string(COLO_SOURCE_DIR) + "/calibration/a100-40gb.json"));
  j[key] = value;
  return error_of_call([&] { CalibrationProfile::from_json(j.dump(), "G.json"); });
}

TEST(CalibrationProfileFile, EveryFieldHasARangeSoNoCastWraps) {
  EXPECT_EQ(profile_error("context_mib", 1e308), "G.json:1: field 'context_mib' must be in [0, 1048576], got 1e+308");
  EXPECT_THAT(profile_error("cudnn_safety_margin", 1e300), HasSubstr("'cudnn_safety_margin' must be in [0, 10]"));
  EXPECT_THAT(profile_error("trace_cudnn_safety_margin", 1e300), HasSubstr("'trace_cudnn_safety_margin' must be in [0, 10]"));
  EXPECT_THAT(profile_error("conv_workspace_ratio", 1e300), HasSubstr("'conv_workspace_ratio' must be in [0, 1000]"));
  EXPECT_THAT(profile_error("cublas_workspace_mib", 1e300), HasSubstr("'cublas_workspace_mib' must be in [0, 1048576]"));
  EXPECT_THAT(profile_error("gpu_total_mib", 0), HasSubstr("'gpu_total_mib' must be a whole number of MiB ≥ 1"));
  EXPECT_THAT(profile_error("gpu_total_mib", 0.5), HasSubstr("'gpu_total_mib' must be a whole number of MiB ≥ 1"));
  EXPECT_THAT(profile_error("gpu_total_mib", 2e13), HasSubstr("'gpu_total_mib' must be in [0, 1048576]"));
  EXPECT_THAT(profile_error("safety_margin", -0.1), HasSubstr("'safety_margin' must be in [0, 10], got -0.1"));
}

// A misspelt, repeated or mistyped field would silently leave a constant at its default (or take
// the last of two values) and change every estimate: each is refused, with its line.
TEST(CalibrationProfileFile, UnknownRepeatedAndMistypedFieldsAreRefusedWithTheirLine) {
  const std::string text = read_text(std::string(COLO_SOURCE_DIR) + "/calibration/a100-40gb.json");
  const auto err = [](const std::string& t) { return error_of_call([&] { CalibrationProfile::from_json(t, "G.json"); }); };
  EXPECT_NO_THROW(CalibrationProfile::from_json(text, "G.json"));  // every shipped field is known
  EXPECT_NO_THROW(CalibrationProfile::from_json(read_text(std::string(COLO_SOURCE_DIR) + "/calibration/h100-80gb.json"), "H.json"));
  const std::string head = "{\n  \"gpu_total_mib\": 40960,\n  \"context_mib\": 1000,\n";
  EXPECT_EQ(err(head + "  \"conv_workspace_ratoi\": 2\n}\n"), "G.json:4: unknown field 'conv_workspace_ratoi'");
  EXPECT_EQ(err(head + "  \"context_mib\": 2000\n}\n"), "G.json:4: field 'context_mib' given twice");
  EXPECT_EQ(err(head + "  \"gpu\": null\n}\n"), "G.json:4: field 'gpu' is not a string");
  EXPECT_EQ(err(head + "  \"safety_margin\": \"0.1\"\n}\n"), "G.json:4: field 'safety_margin' is not a number");
  EXPECT_EQ(err("{\n  \"gpu_total_mib\": 40960,\n  \"context_mib\": 40960\n}\n"),
            "G.json:3: field 'context_mib' (40960 MiB) leaves nothing of the GPU's 40960 MiB (gpu_total_mib)");
  EXPECT_EQ(err("{\n  \"context_mib\": 1\n}\n"), "G.json: missing field 'gpu_total_mib'");
  // A number past a double is no JSON the parser reads either (fuzz/regressions/calibration_profile:
  // it escaped as nlohmann's out_of_range and ended the process).
  EXPECT_THAT(err("{\n  \"gpu_total_mib\": 4091e30860\n}\n"),
              AllOf(StartsWith("G.json:1: not a usable profile ("), HasSubstr("number overflow parsing '4091e30860'")));
}

TEST(GpuMemNetModelFile, ANumberPastADoubleIsACorruptFile) {
  const std::string path = (scratch("gpumemnet-model") / "m.json").string();
  std::ofstream(path) << "{\"capacity_mib\": 1e400}\n";
  EXPECT_EQ(error_of_call([&] { GpuMemNetModel::load(path); }),
            path + ": corrupt GPUMemNet model file: a number in it is out of range");
}

TEST(Summaries, AnAttentionTotalBelowItsChildrenIsNamedWithItsLine) {
  const std::string text =
      "Net(\n"
      "  (emb): Embedding(1000, 64), 64,000 params\n"
      "  (a): SelfAttention(\n"
      "    (q): Linear(in_features=64, out_features=64, bias=True), 4,160 params\n"
      "  ), 10 params\n"
      ")\n";
  EXPECT_EQ(error_of_call([&] { parse_module_repr(text, "attn.repr", 0); }),
            "attn.repr:5: 'SelfAttention' states 10 params, fewer than its children's 4160");
}

TEST(Summaries, KerasTotalMustBeTheSumOfItsRowsAndShapesHaveNoZeroDimension) {
  const std::string head =
      "Model: \"m\"\n"
      "_________________________________________________________________\n"
      " Layer (type)                Output Shape              Param #\n"
      "=================================================================\n";
  const std::string tail = "=================================================================\nTotal params: ";
  EXPECT_THAT(error_of_call([&] {
                parse_keras(head + " dense (Dense)               (None, 10)                330\n" + tail + "1,199,882\n", "k.txt");
              }),
              StartsWith("k.txt:7: Total params 1199882 is not the sum of the table's rows (330)"));
  EXPECT_EQ(parse_keras(head + " dense (Dense)               (None, 10)                330\n" + tail + "330\n", "k.txt")
                .layers.size(),
            1u);
  EXPECT_THAT(error_of_call([&] {
                parse_keras(head + " conv (Conv2D)               (None, 0, 26, 32)         320\n" + tail + "320\n", "k.txt");
              }),
              StartsWith("k.txt:5: bad output shape '(None, 0, 26, 32)' (a zero dimension)"));
}

TEST(Summaries, TorchsummaryShapesMustBalanceTheirBrackets) {
  const std::string text =
      "----------------------------------------------------------------\n"
      "        Layer (type)               Output Shape         Param #\n"
      "================================================================\n"
      "            Linear-1                  [[-1, 5]              55\n"
      "================================================================\n"
      "Total params: 55\n";
  EXPECT_THAT(error_of_call([&] { parse_torchsummary(text, "t.txt"); }), StartsWith("t.txt:4: bad output shape '[[-1, 5]'"));
}

const std::string kCarmaHeader = "workload,model,dataset,batch_size,epochs,epoch_minutes,gpus,measured_mib,summary,optimizer,seq_len";

// A carma-format data set beside a summaries/ folder with one real summary in it.
std::string carma_dataset(const std::string& name, const std::string& row) {
  const fs::path d = scratch(name);
  fs::create_directories(d / "summaries");
  fs::copy_file(std::string(COLO_SOURCE_DIR) + "/data/carma/summaries/resnet50_32.model", d / "summaries" / "r.model",
                fs::copy_options::overwrite_existing);
  std::ofstream(d / "w.csv") << kCarmaHeader << "\n" << row << "\n";
  return (d / "w.csv").string();
}

TEST(Datasets, CarmaRowsNameTheirLineForOptimizerAndSummaryProblems) {
  const std::string bad_opt = carma_dataset("opt", "r,resnet50,imagenet,32,1,1,1,6000,r.model,adamz,");
  EXPECT_THAT(error_of_call([&] { load_dataset(bad_opt, DatasetFormat::CarmaWorkloads, Split::All); }),
              StartsWith(bad_opt + ":2: column 'optimizer': unknown optimizer 'adamz'"));
  const std::string escape = carma_dataset("escape", "r,resnet50,imagenet,32,1,1,1,6000,../../../../etc/passwd,adam,");
  EXPECT_THAT(error_of_call([&] { load_dataset(escape, DatasetFormat::CarmaWorkloads, Split::All); }),
              StartsWith(escape + ":2: summary '../../../../etc/passwd' must be a file name in "));
  const std::string ok = carma_dataset("ok", "r,resnet50,imagenet,32,1,1,1,6000,r.model,adam,");
  EXPECT_EQ(load_dataset(ok, DatasetFormat::CarmaWorkloads, Split::All).size(), 1u);
}

TEST(Datasets, EverySplitChecksEveryRow) {
  // Twelve rows of each split from the real CSV, then one damaged row of the train split: asking
  // for the test split must still refuse the file.
  const std::string src = std::string(COLO_SOURCE_DIR) + "/data/gpumemnet/cnn.csv";
  std::ifstream in(src);
  std::string header, line, damaged;
  std::getline(in, header);
  std::vector<std::string> keep;
  int train = 0, test = 0;
  while (std::getline(in, line) && (train < 12 || test < 12 || damaged.empty())) {
    const std::string file = line.substr(0, line.find(','));
    if (in_train_split(file)) {
      if (damaged.empty() && line.find(",SUCCESSFUL") != std::string::npos) {
        damaged = line;  // its measured memory becomes text below
        continue;
      }
      if (train++ < 12) keep.push_back(line);
    } else if (test++ < 12) {
      keep.push_back(line);
    }
  }
  ASSERT_FALSE(damaged.empty());
  const std::string bad = with_field(header, damaged, "Max GPU Memory (MiB)", "notanumber");
  const fs::path d = scratch("split");
  std::ofstream out(d / "split.csv");
  out << header << "\n";
  for (const auto& k : keep) out << k << "\n";
  out << bad << "\n";
  out.close();
  const std::string path = (d / "split.csv").string();
  EXPECT_THAT(error_of_call([&] { load_dataset(path, DatasetFormat::GpuMemNetCNN, Split::Test); }),
              AllOf(StartsWith(path + ":" + std::to_string(keep.size() + 2) + ": "), HasSubstr("notanumber")));
}

TEST(Datasets, ActivityBelowZeroOtherThanTheSentinelIsDamage) {
  const fs::path d = scratch("smact");
  const std::string src = std::string(COLO_SOURCE_DIR) + "/data/gpumemnet/mlp.csv";
  std::ifstream in(src);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const std::string bad = with_field(header, row, "Avg SMACT", "-0.5");
  std::ofstream(d / "m.csv") << header << "\n" << bad << "\n";
  EXPECT_THAT(error_of_call([&] { load_gpumemnet_dataset((d / "m.csv").string(), GpuMemNetFamily::MLP); }),
              HasSubstr("column 'Avg SMACT' is -0.5 (an activity is in [0, 1], or -1 when not sampled)"));
}

TEST(Evaluation, SkippedRowsKeepTheirMeasurementButAreNotScored) {
  const std::string ok = carma_dataset("skip", "r,resnet50,imagenet,32,1,1,1,6000,r.model,adam,");
  auto rows = load_dataset(ok, DatasetFormat::CarmaWorkloads, Split::All);
  rows[0].graph.reset();  // as a row whose model cannot be built
  const auto est = make_estimator("allocsim");
  const auto out = evaluate(rows, *est, "a100-40gb", Optimizer::Adam);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].skipped);
  ASSERT_TRUE(out[0].measured.has_value());
  EXPECT_EQ(*out[0].measured, 6000);
  const auto s = summarize(out, 40960);
  EXPECT_EQ(s.skipped, 1u);
  EXPECT_EQ(s.n, 0u);
}

TEST(TraceReplayOom, TheExplanationSaysWhereItRanOutAndThePeakIsALowerBound) {
  // 1 TiB in one allocation: more than any A100 has.
  const ProbeTrace t = parse_probe_trace(
      "colo-probe-trace 1\nH {\"model\":\"t\",\"batch\":4}\nM 1 1099511627776 0 forward empty\nS 1\nE {}\n", "big.trace");
  EstimateRequest req;
  req.gpu = "a100-40gb";
  req.trace = &t;
  const auto e = make_estimator("trace")->estimate(req);
  EXPECT_GT(e.mib, 40960);
  EXPECT_THAT(e.explanation, HasSubstr("ran out of memory at probe event 1 of"));
  EXPECT_THAT(e.explanation, HasSubstr("forward empty (step 1): asking for 1048576 MiB with 0 MiB reserved"));
  EXPECT_THAT(e.explanation, HasSubstr("does not fit the GPU"));
  EXPECT_GE(e.peak_mib, 1048576.0);
}

}  // namespace
}  // namespace colo::estimate
