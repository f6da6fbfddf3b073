// Numbers at the CLI's edges (issue 10): flags, CSV cells and file sizes out of range are one
// "colo: error: …" line (exit 2) naming the value and where it came from — never a wrap, a
// clamp or a silent default. Runs the built binary; skipped when it has not been built here.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_run.h"
#include "data_path.h"

namespace colo::sim {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using test::CliRun;

CliRun colo(const std::string& args) { return test::run_colo_args(args); }

std::string sim(const std::string& args) {
  return "sim --workloads " + test::carma("workloads.csv") + " --trace " +
         test::carma("traces/philly_mix_90_tasks.csv") + " " + args;
}

std::string summary(const std::string& name) { return test::carma("summaries/" + name); }

// A scratch file under the system temp folder, removed with the fixture.
class CliNumbers : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
    dir_ = fs::temp_directory_path() / ("colo-cli-numbers-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  fs::path dir_;
};

void expect_one_line_error(const CliRun& r, const std::string& what, const std::string& context) {
  EXPECT_EQ(r.status, 2) << context << ": " << r.out;
  EXPECT_EQ(r.out.rfind("colo: error: ", 0), 0u) << context << ": " << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << context << ": " << r.out;
  EXPECT_THAT(r.out, HasSubstr(what)) << context;
}

TEST_F(CliNumbers, SimMarginLargerThanInt64OrAGpuIsRejected) {
  // Finding 1: this wrapped and packed 25 jobs on one GPU with 29 OOMs.
  expect_one_line_error(colo(sim("--margin-mib 9223372036854775807 --json")),
                        "--margin-mib: memory '9223372036854775807' is out of range (expected 0..1048576 MiB)", "margin int64");
  expect_one_line_error(colo(sim("--margin-mib 50000 --gpu-memory-mib 40960 --json")),
                        "--margin-mib 50000 is larger than a GPU", "margin > GPU");
  for (const char* bad : {"--gpus 99999999999999999999", "--gpus -1", "--gpu-memory-mib 0", "--min-free-mib -1",
                          "--recovery-step-mib 0", "--smact-cap nan", "--duration-jitter inf", "--ramp-s -5",
                          "--oom-detect-s 1e999", "--seed -1", "--gpus 4x"})
    expect_one_line_error(colo(sim(bad)), "colo: error: --", bad);
  // The range is documented in --help.
  EXPECT_THAT(colo("sim --help").out, HasSubstr("[0..1048576 MiB"));
}

// CLI11's own parse errors follow the same contract: one line, exit 2 (not CLI11's two lines
// "…\nRun with --help for more information." and exit 109).
TEST_F(CliNumbers, Cli11ParseErrorsAreOneLineExit2) {
  const CliRun r = colo("sim --gpu 4");
  expect_one_line_error(r, "(see --help)", "unknown flag");
  EXPECT_THAT(r.out, HasSubstr("--gpu"));
  expect_one_line_error(colo("no-such-command"), "(see --help)", "unknown subcommand");
  EXPECT_EQ(colo("--help").status, 0);
}

TEST_F(CliNumbers, EstimateBatchAndSeqLenOutOfRange) {
  // Finding 2: horus printed -9223372036854775808 MiB.
  const std::string s = summary("resnet50_32.model");
  expect_one_line_error(colo("estimate --estimator horus --summary " + s + " --batch 9223372036854775807"),
                        "--batch: 9223372036854775807 is out of range (expected 1..1048576)", "batch int64");
  // Finding 3: an overflowing batch was clamped to INT64_MAX.
  expect_one_line_error(colo("estimate --estimator horus --summary " + s + " --batch 99999999999999999999"),
                        "--batch: 99999999999999999999 is out of range", "batch overflow");
  // Finding 4: a negative or zero sequence length was silently replaced by the default.
  const std::string bert = summary("BERT_base.model");
  expect_one_line_error(colo("estimate --estimator horus --summary " + bert + " --batch 8 --seq-len -512"),
                        "--seq-len: -512 is out of range", "seq-len negative");
  expect_one_line_error(colo("estimate --estimator horus --summary " + bert + " --batch 8 --seq-len 0"),
                        "--seq-len: 0 is out of range", "seq-len zero");
  for (const char* bad : {"--batch 1e3", "--batch 0x10", "--batch ''", "--stated-mib -1"})
    expect_one_line_error(colo("estimate --estimator horus --summary " + s + " " + bad), "colo: error: --", bad);
  // The largest accepted batch gives a finite, positive estimate.
  const CliRun big = colo("estimate --estimator horus --summary " + bert + " --batch 1048576 --json");
  ASSERT_EQ(big.status, 0) << big.out;
  EXPECT_THAT(big.out, ::testing::Not(HasSubstr("\"estimate_mib\":-")));
}

// Flags the chosen estimate does not read are refused, not silently ignored (the answer would not
// be for them): the probe's and the oracle's, on a summary estimate.
TEST_F(CliNumbers, EstimateFlagsItWouldNotReadAreRefused) {
  const std::string base = "estimate --estimator allocsim --summary " + summary("resnet50_32.model") + " --batch 8 ";
  for (const auto& [flag, want] : std::vector<std::pair<std::string, std::string>>{
           {"--probe-timeout 5", "estimate: --probe-timeout goes with --probe or --script"},
           {"--nproc-per-node 4", "estimate: --nproc-per-node goes with --script"},
           {"--python python3", "estimate: --python goes with --script"},
           {"--stated-mib 100", "estimate: give either --stated-mib (the oracle's figure) or --summary, not both"}})
    expect_one_line_error(colo(base + flag), want, flag);
  expect_one_line_error(colo("estimate --estimator horus --stated-mib 100"),
                        "estimate: --stated-mib is the oracle's figure; --estimator horus does not read it", "stated, horus");
  expect_one_line_error(colo("estimate --probe torchvision:resnet18 --batch 8 --stated-mib 100"),
                        "estimate: --stated-mib is not read with --probe", "stated with probe");
  EXPECT_EQ(colo("estimate --estimator oracle --stated-mib 100 --json").status, 0);
}

TEST_F(CliNumbers, CsvValueOutOfRangeNamesFileLineAndColumn) {
  // Finding 5: 9e300 in a MiB column reached llround (undefined).
  std::ifstream in(test::carma("workloads.csv"));
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);  // BERT_base,...,20774,...
  const auto pos = row.find(",20774,");
  ASSERT_NE(pos, std::string::npos) << row;
  row.replace(pos, 7, ",9e300,");
  const std::string w = write("workloads.csv", header + "\n" + row + "\n");
  const std::string t = write("trace.csv", "submit_offset_s,workload\n0,BERT_base\n");
  expect_one_line_error(colo("sim --workloads " + w + " --trace " + t + " --json"),
                        w + ":2: column 'measured_mib': 9e300 is out of range (expected", "9e300");
}

TEST_F(CliNumbers, HeaderOnlyDataSetIsAnError) {
  // Finding 6: n = 0 and exit 0.
  const std::string p = write("header_only.csv", "Filename,Activations-Params,Batch Size,Max GPU Memory (MiB)\n");
  expect_one_line_error(colo("estimate eval --dataset " + p + " --format gpumemnet-mlp --estimator horus"),
                        p + ": no data rows", "header only");
}

TEST_F(CliNumbers, DuplicatedCsvColumnIsAnError) {
  // Finding 7: one of two same-named columns silently won.
  const std::string p = write("dup.csv", "Filename,Batch Size,Activations-Params,Batch Size,Max GPU Memory (MiB)\n"
                                         "a.out,2,\"[('linear', 2, 10)]\",4,1500\n");
  expect_one_line_error(colo("estimate eval --dataset " + p + " --format gpumemnet-mlp --estimator horus"),
                        "column 'Batch Size' appears twice in the header", "estimate eval");
  const std::string t = write("trace.csv", "submit_offset_s,workload,workload\n0,BERT_base,BERT_base\n");
  expect_one_line_error(colo("sim --workloads " + test::carma("workloads.csv") + " --trace " + t),
                        t + ":1: column 'workload' appears twice", "trace");
}

TEST_F(CliNumbers, CsvQuotesUtf8AndNewlinesInCellsAreOneLineErrors) {
  const std::string header = "Filename,Activations-Params,Batch Size,Max GPU Memory (MiB)\n";
  const std::string name = "input:4_output:2_depth:1_arch:u_batch:2_act:relu.out";
  const std::string good = name + ",\"[('linear', 2, 10)]\",2,1500\n";
  const std::string q = write("quote.csv", header + good + name + ",\"[('linear', 2, 10)],2,1500\n");
  expect_one_line_error(colo("estimate eval --dataset " + q + " --format gpumemnet-mlp --estimator horus"),
                        q + ":3: unterminated quote", "unterminated quote");
  // A quoted cell may hold a newline; quoted back in a message it is escaped.
  const std::string nl = write("newline.csv", header + good + name + ",\"[('linear', 2, 10)]\",\"2\nInjected\",1500\n");
  expect_one_line_error(colo("estimate eval --dataset " + nl + " --format gpumemnet-mlp --estimator horus"),
                        nl + ":3: column 'Batch Size': '2\\nInjected' is not a number", "newline in a cell");
  const std::string t = write("trace.csv", "submit_offset_s,workload\n0,BERT\xff\xfe\n");
  expect_one_line_error(colo("sim --workloads " + test::carma("workloads.csv") + " --trace " + t + " --json"),
                        t + ":2: column 'workload': not valid UTF-8", "invalid UTF-8");
}

TEST_F(CliNumbers, OversizedSummaryAndDataSetAreRefusedBeforeReading) {
  // Finding 8: a 104 MB summary took 25 s and 1.9 GiB.
  const std::string big = (dir_ / "big.model").string();
  {
    std::ofstream f(big, std::ios::binary);
    const std::string line(1023, 'x');
    for (int i = 0; i < 17 * 1024; ++i) f << line << '\n';
  }
  expect_one_line_error(colo("estimate --estimator horus --summary " + big + " --batch 1"),
                        big + ": model summary is 17.0 MiB, over the 16.0 MiB limit", "summary");
  const std::string csv = (dir_ / "big.csv").string();
  {
    std::ofstream f(csv, std::ios::binary);
    f.seekp((std::streamoff{256} << 20));  // a sparse file just over 256 MiB
    f << '\n';
  }
  expect_one_line_error(colo("estimate eval --dataset " + csv + " --format gpumemnet-mlp --estimator horus"),
                        "over the 256.0 MiB limit", "data set");
  expect_one_line_error(colo("sim --workloads " + csv), "over the 256.0 MiB limit", "workloads");
}

}  // namespace
}  // namespace colo::sim
