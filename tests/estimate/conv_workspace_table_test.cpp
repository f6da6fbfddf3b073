// A GPU's measured convolution workspaces (trace/conv/conv_workspace_table.h): the table reader, and the
// replay taking each convolution's measured outputs and transients in their order. Answers follow
// from the caching allocator's rules (sizes >= 10 MiB round to 2 MiB, best fit, blocks split).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "estimate/calibration/calibration_profile.h"
#include "estimate/estimator.h"
#include "estimate/trace/conv/conv_workspace_table.h"
#include "estimate/trace/probe_trace.h"
#include "estimate/trace/trace_replay.h"
#include "core/units.h"

namespace colo::estimate {
namespace {

const std::string kKey = "f:8x3x32x32:16x3x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1";

std::string table(const std::string& body) {
  return "colo-conv-workspace 1\nH {\"gpu\":\"test\"}\n" + body;
}

std::string table_error(const std::string& text) {
  try {
    ConvWorkspaceTable::parse(text, "w.tsv");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(ConvWorkspaceTable, ReadsStepsInOrder) {
  const auto t = ConvWorkspaceTable::parse(table(kKey + "\to +41943040 -0\nb:x:y\to o +5 +7 -1 -0\n"), "w.tsv");
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.header()["gpu"], "test");
  const auto* s = t.find(kKey);
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->size(), 3u);
  EXPECT_EQ((*s)[0].kind, ConvWorkspaceStep::Kind::Output);
  EXPECT_EQ((*s)[1].kind, ConvWorkspaceStep::Kind::Alloc);
  EXPECT_EQ((*s)[1].bytes, 40 * kBytesPerMiB);
  EXPECT_EQ((*s)[2].kind, ConvWorkspaceStep::Kind::Free);
  const auto* b = t.find("b:x:y");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ((*b)[4].index, 1u);  // the later transient freed first
  EXPECT_EQ(t.find("f:nothing"), nullptr);
}

TEST(ConvWorkspaceTable, RefusesMalformedTablesNamingTheLine) {
  EXPECT_EQ(table_error(""), "w.tsv: empty file (not a convolution workspace table)");
  EXPECT_EQ(table_error("nope\n"),
            "w.tsv:1: not a convolution workspace table (first line must be 'colo-conv-workspace 1')");
  EXPECT_EQ(table_error("colo-conv-workspace 2\n"), "w.tsv:1: unsupported table version (this colo reads version 1)");
  EXPECT_EQ(table_error("colo-conv-workspace 1\nk\to\n"), "w.tsv: no header (H)");
  EXPECT_EQ(table_error(table("H {}\n")), "w.tsv:3: second header (H)");
  EXPECT_EQ(table_error("colo-conv-workspace 1\nH [1]\n"), "w.tsv:2: H record must be a JSON object");
  EXPECT_EQ(table_error(table("k o\n")), "w.tsv:3: expected '<key><TAB><steps>'");
  EXPECT_EQ(table_error(table("a$b\to\n")), "w.tsv:3: bad convolution key 'a$b'");
  EXPECT_EQ(table_error(table("k\t\n")), "w.tsv:3: key 'k' has no steps");
  EXPECT_EQ(table_error(table("k\to x\n")), "w.tsv:3: unknown step 'x' (o, +BYTES, -INDEX)");
  EXPECT_EQ(table_error(table("k\to -0\n")), "w.tsv:3: free of transient 0 that was never allocated");
  EXPECT_EQ(table_error(table("k\t+5 -0 -0\n")), "w.tsv:3: transient 0 freed twice");
  EXPECT_EQ(table_error(table("k\to +5\n")),
            "w.tsv:3: transient 0 is never freed (an allocation the convolution keeps is an output: 'o')");
  EXPECT_EQ(table_error(table("k\to\nk\to\n")), "w.tsv:4: key 'k' listed twice");
  EXPECT_NE(table_error(table("k\t+-5 -0\n")).find("w.tsv:3: transient bytes"), std::string::npos);
  EXPECT_NE(table_error(table("k\t+1125899906842625 -0\n")).find("w.tsv:3: transient bytes"), std::string::npos);
  EXPECT_NE(table_error(table("k\t+5 -99999\n")).find("w.tsv:3: transient index"), std::string::npos);
}

std::string workspace_trace(const std::string& body) {
  return "colo-probe-trace 1\nH {\"model\":\"t\",\"batch\":8}\n" + body + "S 1\nE {}\n";
}

TraceReplay replay(const std::string& trace_body, const std::string& steps, double ratio = 0) {
  const auto t = parse_probe_trace(workspace_trace(trace_body), "t.trace");
  TraceReplayOptions o;
  o.conv_workspace_ratio = ratio;
  o.conv_table = std::make_shared<const ConvWorkspaceTable>(ConvWorkspaceTable::parse(table(kKey + "\t" + steps + "\n"), "w.tsv"));
  return replay_probe_trace(t, o);
}

// A 30 MiB output and a 40 MiB workspace: measured after the output (cuDNN's order), the workspace
// needs a segment of its own (72 MiB with the parameter's 2 MiB); were it taken before, the output
// would reuse its cached block (42 MiB). The order is what the table says.
TEST(ConvWorkspaceTable, TheReplayFollowsTheMeasuredOrder) {
  const std::string body = "M 1 1048576 0 load param\nC forward convolution 100 200 0 " + kKey +
                           "\nM 2 31457280 0 forward convolution\n";
  const auto after = replay(body, "o +41943040 -0");
  EXPECT_EQ(after.reserved_peak, 72 * kBytesPerMiB);
  EXPECT_EQ(after.reserved_peak_at, "forward convolution (step 1)");
  EXPECT_EQ(after.convs, 1u);
  EXPECT_EQ(after.convs_measured, 1u);
  EXPECT_EQ(replay(body, "+41943040 -0 o").reserved_peak, 42 * kBytesPerMiB);
  // No workspace measured: the output alone.
  EXPECT_EQ(replay(body, "o").reserved_peak, 32 * kBytesPerMiB);
}

// Steps after an output the probe did not record (a gradient PyTorch allocates that the trace has
// not) still run, at the next record; transients freed out of order are each freed once.
TEST(ConvWorkspaceTable, StepsBeyondTheRecordedOutputsStillRun) {
  const std::string body = "C backward convolution_backward 100 200 0 " + kKey +
                           "\nM 2 31457280 0 backward convolution_backward\n";
  const auto r = replay(body, "o +20971520 -0 o +41943040 +2097152 -2 -1");
  // 30 (output) + 20 (transient, then cached) + 40 (the cached 20 is too small: a new segment); the
  // 2 MiB transient then splits the cached 20 MiB block: 90 MiB.
  EXPECT_EQ(r.reserved_peak, (30 + 20 + 40) * kBytesPerMiB);
  EXPECT_EQ(r.convs_measured, 1u);
}

// A key the table does not list, or a trace written before keys, replays with the profile's ratio.
TEST(ConvWorkspaceTable, UnlistedKeysFallBackToTheRatio) {
  const std::string other = "M 1 31457280 0 forward convolution\nC forward convolution 10485760 20971520 0 "
                            "f:1x1x1x1:1x1x1x1:s1x1:p0x0:d1x1:g1:t0:float32:b0\n";
  const auto r = replay(other, "o +41943040 -0", 1.0);
  EXPECT_EQ(r.convs_measured, 0u);
  EXPECT_EQ(r.reserved_peak, 50 * kBytesPerMiB);  // 30 + a 20 MiB workspace (1.0 x the larger activation)
  const auto old = replay("M 1 31457280 0 forward convolution\nC forward convolution 10485760 20971520 0\n",
                          "o +41943040 -0", 1.0);
  EXPECT_EQ(old.convs_measured, 0u);
  EXPECT_EQ(old.reserved_peak, 50 * kBytesPerMiB);
}

TEST(ConvWorkspaceTable, TheProbeTraceCarriesTheKey) {
  const auto t = parse_probe_trace(workspace_trace("C forward convolution 1 2 0 " + kKey + "\nC forward convolution 1 2 0 " +
                                         kKey + "\nC forward convolution 1 2 0\n"),
                                   "t.trace");
  ASSERT_EQ(t.conv_keys.size(), 1u);
  EXPECT_EQ(t.conv_keys[0], kKey);
  EXPECT_EQ(t.records[0].key, 0u);
  EXPECT_EQ(t.records[1].key, 0u);
  EXPECT_EQ(t.records[2].key, TraceRecord::kNoKey);
  try {
    parse_probe_trace(workspace_trace("C forward convolution 1 2 0 a$b\n"), "t.trace");
    ADD_FAILURE();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "t.trace:3: bad convolution key 'a$b'");
  }
  EXPECT_THROW(parse_probe_trace(workspace_trace("C forward convolution 1 2 0 k extra\n"), "t.trace"), UserError);
}

// A profile names its table by a file name beside it; the estimator reports how many convolutions
// the table covered.
class ProfileWithTable : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/conv_table_profile";
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ + "/t.tsv") << table(kKey + "\to +41943040 -0\n");
    ::setenv("COLO_CALIBRATION_DIR", dir_.c_str(), 1);
  }
  void TearDown() override { ::unsetenv("COLO_CALIBRATION_DIR"); }
  void write_profile(const std::string& extra) {
    std::ofstream(dir_ + "/gpu-t.json") << "{\"gpu\":\"gpu-t\",\"gpu_total_mib\":81559,\"context_mib\":500" << extra
                                        << "}";
  }
  std::string dir_;
};

TEST_F(ProfileWithTable, TheEstimatorReplaysTheMeasuredWorkspaces) {
  write_profile(",\"conv_workspace_table\":\"t.tsv\"");
  const auto p = load_profile("gpu-t");
  EXPECT_EQ(p.conv_workspace_table, "t.tsv");
  const auto o = TraceReplayOptions::from_profile(p);
  ASSERT_NE(o.conv_table, nullptr);
  EXPECT_EQ(o.conv_table->size(), 1u);
  const auto t = parse_probe_trace(
      workspace_trace("C forward convolution 100 200 0 " + kKey + "\nM 2 31457280 0 forward convolution\n"), "t.trace");
  EstimateRequest req;
  req.gpu = "gpu-t";
  req.batch = 8;
  req.trace = &t;
  const auto e = make_estimator("trace")->estimate(req);
  EXPECT_DOUBLE_EQ(e.peak_mib, 70.0);
  EXPECT_NE(e.explanation.find("1 convs (1 with workspaces measured on the GPU)"), std::string::npos) << e.explanation;
}

TEST_F(ProfileWithTable, BadTableNamesAndFilesAreOneLineErrors) {
  for (const char* bad : {"../t.tsv", "sub/t.tsv", ".hidden", ""}) {
    write_profile(std::string(",\"conv_workspace_table\":\"") + bad + "\"");
    try {
      load_profile("gpu-t");
      ADD_FAILURE() << bad;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("field 'conv_workspace_table' must be a file name beside the profile"),
                std::string::npos)
          << e.what();
    }
  }
  write_profile(",\"conv_workspace_table\":7");
  EXPECT_THROW(load_profile("gpu-t"), UserError);
  write_profile(",\"conv_workspace_table\":\"missing.tsv\"");
  const auto p = load_profile("gpu-t");
  try {
    TraceReplayOptions::from_profile(p);
    ADD_FAILURE();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.tsv: cannot open convolution workspace table"), std::string::npos)
        << e.what();
  }
}

// The shipped H100 profile's table reads, and lists what its header says was measured where.
TEST(ConvWorkspaceTable, TheShippedH100TableReads) {
  const auto o = TraceReplayOptions::from_profile(load_profile("h100-80gb"));
  ASSERT_NE(o.conv_table, nullptr);
  EXPECT_GT(o.conv_table->size(), 10000u);
  EXPECT_EQ(o.conv_table->header()["gpu"], "NVIDIA H100 80GB HBM3");
  EXPECT_NE(o.conv_table->find("f:128x3x224x224:64x3x7x7:s2x2:p3x3:d1x1:g1:t0:float32:b0"), nullptr);
  // The shapes of docs/GPU-VALIDATION.md §9, measured on an H200, are in it too and named as such.
  EXPECT_EQ(o.conv_table->header()["gpus"], "NVIDIA H100 80GB HBM3 + NVIDIA H200");
  EXPECT_NE(o.conv_table->find("f:32x3x224x224:64x3x7x7:s2x2:p3x3:d1x1:g1:t0:float16:b0"), nullptr);
}

}  // namespace
}  // namespace colo::estimate
