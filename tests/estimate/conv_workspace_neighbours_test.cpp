// Shapes the GPU's workspace table lacks (trace/conv/conv_workspace_neighbours.h): the nearest
// measured shapes of the same class, their steps scaled, and the replay keeping the largest peak of
// one run per neighbour. Peaks follow from the caching allocator's rules (requests >= 10 MiB round
// to 2 MiB and take a segment of their own when no cached block fits).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "core/error.h"
#include "estimate/calibration/calibration_profile.h"
#include "estimate/estimator.h"
#include "estimate/trace/conv/conv_workspace_neighbours.h"
#include "estimate/trace/probe_trace.h"
#include "estimate/trace/trace_replay.h"
#include "core/units.h"

namespace colo::estimate {
namespace {

// Forward 3x3 convolutions, 64 -> 64 channels, fp32, differing in batch and image size.
const std::string kB8 = "f:8x64x32x32:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1";    // 2 MiB activations
const std::string kB16 = "f:16x64x32x32:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1";  // 4 MiB
const std::string kB64 = "f:64x64x64x64:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1";  // 64 MiB
const std::string k1x1 = "f:16x64x32x32:64x64x1x1:s1x1:p0x0:d1x1:g1:t0:float32:b1";
const std::string kHalf = "f:16x64x32x32:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float16:b1";

std::shared_ptr<const ConvWorkspaceTable> neighbour_table(const std::string& rows) {
  return std::make_shared<const ConvWorkspaceTable>(
      ConvWorkspaceTable::parse("colo-conv-workspace 1\nH {\"gpu\":\"test\"}\n" + rows, "w.tsv"));
}

const std::string kTable = kB8 + "\to +6291456 -0\n" + kB64 + "\to +201326592 -0\n" + k1x1 + "\to\n" + kHalf +
                           "\to +1 -0\nnotashape\to\n";

TEST(ConvWorkspaceNeighbours, NearestOfTheSameClassFirst) {
  const ConvWorkspaceNeighbours n(neighbour_table(kTable));
  EXPECT_EQ(n.indexed(), 4u);  // "notashape" can only be found exactly
  const auto s = parse_conv_shape("f:16x64x32x32:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1");
  ASSERT_TRUE(s);
  const auto near = n.nearest(*s, 5);
  // Only the fp32 3x3 shapes: batch 8 (one octave away) before batch 64 at 64x64 (two octaves of
  // batch, two of image size).
  ASSERT_EQ(near.size(), 2u);
  EXPECT_EQ(*near[0].key, kB8);
  EXPECT_DOUBLE_EQ(near[0].scale, 2.0);  // twice the batch: twice the activations
  EXPECT_EQ(*near[1].key, kB64);
  EXPECT_DOUBLE_EQ(near[1].scale, 1.0 / 16);
  EXPECT_EQ(n.nearest(*s, 1).size(), 1u);
  EXPECT_TRUE(n.nearest(*s, 0).empty());
  // A class the table has no shape of: nothing (the replay then uses the profile's ratios).
  const auto grouped = parse_conv_shape("f:16x64x32x32:64x1x3x3:s1x1:p1x1:d1x1:g64:t0:float32:b1");
  ASSERT_TRUE(grouped);
  EXPECT_TRUE(n.nearest(*grouped, 3).empty());
}

TEST(ConvWorkspaceNeighbours, TiesGoToTheSmallerKeySoTheTableOrderDoesNotMatter) {
  const std::string a = "f:8x64x32x32:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b0";
  const std::string b = "f:8x64x32x32:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1";
  const auto s = parse_conv_shape("f:8x64x32x32:64x64x3x3:s1x1:p2x2:d1x1:g1:t0:float32:b1");  // same features
  ASSERT_TRUE(s);
  for (const auto& rows : {a + "\to\n" + b + "\to +5 -0\n", b + "\to +5 -0\n" + a + "\to\n"}) {
    const ConvWorkspaceNeighbours n(neighbour_table(rows));
    const auto near = n.nearest(*s, 2);
    ASSERT_EQ(near.size(), 2u);
    EXPECT_EQ(*near[0].key, a);
    EXPECT_EQ(*near[1].key, b);
  }
}

TEST(ConvWorkspaceNeighbours, ScaledStepsKeepTheOrderAndClamp) {
  const auto t = neighbour_table(kB8 + "\to o +1000 +3 -1 -0\n");
  const ConvWorkspaceNeighbours::Neighbour n{nullptr, t->find(kB8), 2.5};
  const auto s = ConvWorkspaceNeighbours::scaled_steps(n, 2000);
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(s[0].kind, ConvWorkspaceStep::Kind::Output);
  EXPECT_EQ(s[2].bytes, 2000u);  // 2 500 clamped
  EXPECT_EQ(s[3].bytes, 8u);     // 7.5 rounded
  EXPECT_EQ(s[4].index, 1u);
  const ConvWorkspaceNeighbours::Neighbour tiny{nullptr, t->find(kB8), 1e-9};
  EXPECT_EQ(ConvWorkspaceNeighbours::scaled_steps(tiny, 2000)[2].bytes, 1u);  // a transient never vanishes
}

std::string neighbour_trace(const std::string& body) {
  return "colo-probe-trace 1\nH {\"model\":\"t\",\"batch\":16}\n" + body + "S 1\nE {}\n";
}

// A batch-16 convolution the table lacks, after a 1 MiB parameter (a 2 MiB segment), with its 30 MiB output.
const std::string kBody = "M 1 1048576 0 load param\nC forward convolution 4194304 4194304 0 " + kB16 +
                          "\nM 2 31457280 0 forward convolution\n";

TEST(ConvWorkspaceNeighbours, TheReplayKeepsTheLargestPeakOfItsRuns) {
  const auto t = parse_probe_trace(neighbour_trace(kBody), "t.trace");
  TraceReplayOptions o;
  o.conv_table = neighbour_table(kTable);
  o.conv_neighbours = std::make_shared<const ConvWorkspaceNeighbours>(o.conv_table);
  o.conv_neighbour_count = 1;
  // Run 1: batch 8's 6 MiB transient x 2 = 12 MiB, after the output: 2 + 30 + 12.
  const auto one = replay_probe_trace(t, o);
  EXPECT_EQ(one.reserved_peak, 44 * kBytesPerMiB);
  EXPECT_EQ(one.convs_from_neighbours, 1u);
  EXPECT_EQ(one.convs_measured, 0u);
  EXPECT_EQ(one.neighbour_runs, 1u);
  // Run 2 takes batch 64's 192 MiB x 1/16 = 12 MiB too; three runs asked, two shapes: two runs.
  o.conv_neighbour_count = 3;
  const auto three = replay_probe_trace(t, o);
  EXPECT_EQ(three.neighbour_runs, 2u);
  EXPECT_EQ(three.reserved_peak, 44 * kBytesPerMiB);
  EXPECT_EQ(three.worst_run, 0u);  // a tie keeps the nearest
  // A table whose second neighbour's workspace is larger: that run is reported.
  o.conv_table = neighbour_table(kB8 + "\to +6291456 -0\n" + kB64 + "\to +1073741824 -0\n");
  o.conv_neighbours = std::make_shared<const ConvWorkspaceNeighbours>(o.conv_table);
  const auto worst = replay_probe_trace(t, o);
  EXPECT_EQ(worst.worst_run, 1u);
  EXPECT_EQ(worst.reserved_peak, (2 + 30 + 64) * kBytesPerMiB);  // 1 GiB / 16
  // Without neighbours: the profile's ratio (here none), as before.
  o.conv_neighbours = nullptr;
  const auto ratio = replay_probe_trace(t, o);
  EXPECT_EQ(ratio.reserved_peak, 32 * kBytesPerMiB);
  EXPECT_EQ(ratio.convs_from_neighbours, 0u);
}

TEST(ConvWorkspaceNeighbours, AnOutOfMemoryRunIsTheAnswer) {
  const auto t = parse_probe_trace(neighbour_trace(kBody), "t.trace");
  TraceReplayOptions o;
  o.conv_table = neighbour_table(kB8 + "\to +6291456 -0\n" + kB64 + "\to +1073741824 -0\n");
  o.conv_neighbours = std::make_shared<const ConvWorkspaceNeighbours>(o.conv_table);
  o.conv_neighbour_count = 2;
  o.capacity = 64 * kBytesPerMiB;  // the first run fits (44 MiB), the second's 64 MiB workspace does not
  const auto r = replay_probe_trace(t, o);
  EXPECT_TRUE(r.out_of_memory);
  EXPECT_EQ(r.worst_run, 1u);
}

class ProfileWithNeighbours : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/conv_neighbours_profile";
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ + "/t.tsv") << "colo-conv-workspace 1\nH {\"gpu\":\"test\"}\n" << kTable;
    ::setenv("COLO_CALIBRATION_DIR", dir_.c_str(), 1);
  }
  void TearDown() override { ::unsetenv("COLO_CALIBRATION_DIR"); }
  void write_profile(const std::string& extra) {
    std::ofstream(dir_ + "/gpu-n.json") << "{\"gpu\":\"gpu-n\",\"gpu_total_mib\":81559,\"context_mib\":500" << extra
                                        << "}";
  }
  std::string error_of(const std::string& extra) {
    write_profile(extra);
    try {
      load_profile("gpu-n");
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  }
  std::string dir_;
};

TEST_F(ProfileWithNeighbours, TheEstimatorSaysWhereTheWorkspacesCameFrom) {
  write_profile(",\"conv_workspace_table\":\"t.tsv\",\"trace_conv_workspace_neighbours\":2");
  const auto p = load_profile("gpu-n");
  EXPECT_EQ(p.trace_conv_workspace_neighbours, 2);
  EXPECT_NE(p.to_json().find("\"trace_conv_workspace_neighbours\": 2"), std::string::npos);
  const auto t = parse_probe_trace(neighbour_trace(kBody), "t.trace");
  EstimateRequest req;
  req.gpu = "gpu-n";
  req.batch = 16;
  req.trace = &t;
  const auto e = make_estimator("trace")->estimate(req);
  EXPECT_DOUBLE_EQ(e.peak_mib, 44.0);
  EXPECT_NE(e.explanation.find("1 convs (0 with workspaces measured on the GPU, 1 from the nearest measured shapes: "
                               "the largest peak of 2 replays, run 1)"),
            std::string::npos)
      << e.explanation;
  // One neighbour: one replay, nothing to choose between.
  write_profile(",\"conv_workspace_table\":\"t.tsv\",\"trace_conv_workspace_neighbours\":1");
  const auto one = make_estimator("trace")->estimate(req);
  EXPECT_NE(one.explanation.find("(0 with workspaces measured on the GPU, 1 from the nearest measured shapes)"),
            std::string::npos)
      << one.explanation;
}

TEST_F(ProfileWithNeighbours, BadCountsAreOneLineErrors) {
  const std::string table = ",\"conv_workspace_table\":\"t.tsv\"";
  for (const char* bad : {"-1", "17", "2.5", "\"3\"", "true", "18446744073709551615"})
    EXPECT_EQ(error_of(table + ",\"trace_conv_workspace_neighbours\":" + bad),
              dir_ + "/gpu-n.json:1: field 'trace_conv_workspace_neighbours' must be a whole number in [0, 16]")
        << bad;
  EXPECT_EQ(error_of(",\"trace_conv_workspace_neighbours\":3"),
            dir_ + "/gpu-n.json:1: field 'trace_conv_workspace_neighbours' needs a 'conv_workspace_table' (the "
                   "measured shapes the neighbours are taken from)");
  EXPECT_EQ(error_of(table + ",\"trace_conv_workspace_neighbours\":0"), "");
}

// The shipped H100 profile replays unmeasured shapes from their neighbours; ResNet-50's own
// convolutions are all measured, so its estimate does not change.
TEST(ConvWorkspaceNeighbours, TheShippedH100ProfileUsesThem) {
  const auto p = load_profile("h100-80gb");
  EXPECT_GT(p.trace_conv_workspace_neighbours, 0);
  const auto o = TraceReplayOptions::from_profile(p);
  ASSERT_NE(o.conv_neighbours, nullptr);
  EXPECT_EQ(o.conv_neighbours->indexed(), o.conv_table->size());
}

}  // namespace
}  // namespace colo::estimate
