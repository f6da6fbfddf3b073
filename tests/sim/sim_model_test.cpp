// The simulator's model file (sim/models/sim_model.h): the shipped file states the built-in parameters,
// each with a source, and a file with a parameter missing, unsourced or out of range is refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "sim/models/sim_model.h"
#include "sim/simulator.h"

namespace colo::sim {
namespace {

using ::testing::HasSubstr;

const std::string kShipped = std::string(COLO_SOURCE_DIR) + "/models/sim/a100-thesis.toml";

std::string shipped_text() {
  std::ifstream in(kShipped);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string model_error(const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / "colo-sim-model-test.toml").string();
  std::ofstream(path) << text;
  try {
    load_sim_model(path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(SimModel, TheShippedFileIsTheBuiltInModelWithASourceForEveryParameter) {
  const SimModel m = load_sim_model(kShipped);
  const SimConfig builtin;
  EXPECT_EQ(m.mps.interference, builtin.mps.interference);
  EXPECT_EQ(m.streams.busy_floor, builtin.streams.busy_floor);
  EXPECT_EQ(m.streams.switch_overhead, builtin.streams.switch_overhead);
  EXPECT_EQ(m.streams.slice_wait, builtin.streams.slice_wait);
  EXPECT_EQ(m.power.idle_watts, builtin.power.idle_watts);
  EXPECT_EQ(m.power.busy_watts, builtin.power.busy_watts);
  EXPECT_EQ(m.power.max_watts, builtin.power.max_watts);
  EXPECT_EQ(m.ramp_s, builtin.ramp_s);
  EXPECT_EQ(m.oom_detect_s, builtin.oom_detect_s);
  EXPECT_EQ(m.checkpoint.save_s, builtin.checkpoint.save_s);
  EXPECT_EQ(m.checkpoint.restore_s, builtin.checkpoint.restore_s);
  const MigParams mig;
  EXPECT_EQ(m.mig.capacity_1g, mig.capacity_1g);
  EXPECT_EQ(m.mig.capacity_2g, mig.capacity_2g);
  EXPECT_EQ(m.mig.capacity_3g, mig.capacity_3g);
  EXPECT_EQ(m.mig.capacity_4g, mig.capacity_4g);
  EXPECT_EQ(m.mig.capacity_7g, mig.capacity_7g);
  ASSERT_EQ(m.smact.size(), default_sm_activity_table().size());
  for (const auto& [cls, row] : default_sm_activity_table()) {
    ASSERT_TRUE(m.smact.count(cls)) << cls;
    EXPECT_EQ(m.smact.at(cls).at_batch_32, row.at_batch_32) << cls;
    EXPECT_EQ(m.smact.at(cls).per_doubling, row.per_doubling) << cls;
  }
  EXPECT_EQ(m.sources.size(), 24u);  // 16 scalars + 4 classes × 2
  for (const auto& [key, source] : m.sources) EXPECT_FALSE(source.empty()) << key;
  EXPECT_EQ(default_sim_model_path(), kShipped);
}

TEST(SimModel, ChangedValuesAreRead) {
  const std::string path = (std::filesystem::temp_directory_path() / "colo-sim-model-ok.toml").string();
  std::ofstream(path) << replaced(shipped_text(), "interference = { value = 0.05", "interference = { value = 0.12");
  EXPECT_EQ(load_sim_model(path).mps.interference, 0.12);
}

TEST(SimModel, MissingUnsourcedOutOfRangeOrUnknownParametersAreRefused) {
  const std::string t = shipped_text();
  const auto at = t.find("max_watts = {");
  const std::string max_line = t.substr(at, t.find('\n', at) - at);
  EXPECT_THAT(model_error(replaced(t, max_line, "")), HasSubstr("missing 'power.max_watts'"));
  EXPECT_THAT(model_error(replaced(t, max_line, "max_watts = { value = 288.7, source = \"\" }")),
              HasSubstr("'power.max_watts' has no source"));
  EXPECT_THAT(model_error(replaced(t, "busy_floor = { value = 0.80", "busy_floor = { value = 1.5")),
              HasSubstr("'streams.busy_floor.value' must be in [0, 1], got 1.5"));
  EXPECT_THAT(model_error(replaced(t, "[timing]", "[timing]\nwarmup_s = { value = 1, source = \"x\" }")),
              HasSubstr("unknown parameter 'timing.warmup_s'"));
  EXPECT_THAT(model_error(replaced(t, "idle_watts = { value = 55.0", "idle_watts = { value = 95.0")),
              HasSubstr("idle_watts ≤ busy_watts ≤ max_watts"));
  EXPECT_THAT(model_error(replaced(t, "colo-sim-model 1", "colo-sim-model 9")), HasSubstr("format must be"));
  // The SM-activity classes are the catalog's four: another would never be used, a missing one
  // is the model file's fault (not the catalog's); a NaN names the parameter's own range.
  EXPECT_THAT(model_error(replaced(t, "[smact.mnist_cnn]", "[smact.mnist_cnnx]")),
              HasSubstr("unknown SM-activity class 'smact.mnist_cnnx' (the classes are cifar_cnn, imagenet_cnn, mnist_cnn, transformer)"));
  EXPECT_THAT(model_error(replaced(t, "[smact.mnist_cnn]\nat_batch_32 = { value = 0.10, source = \"assumption: tiny CNN on 28x28 "
                                  "images, data-loader bound\" }\nper_doubling = { value = 0.03, source = \"assumption\" }\n", "")),
              HasSubstr("missing 'smact.mnist_cnn'"));
  EXPECT_THAT(model_error(replaced(t, "interference = { value = 0.05", "interference = { value = nan")),
              HasSubstr("'mps.interference.value' must be in [0, 10], got nan"));
  EXPECT_THAT(model_error("[mps\n"), HasSubstr("colo-sim-model-test.toml:1"));
  EXPECT_THROW(load_sim_model("/nonexistent/model.toml"), UserError);
}

// What `colo bench collocation` writes: the whole model, read back equal (values and sources),
// a source with quotes and backslashes intact; a parameter without a source cannot be written.
TEST(SimModel, AWrittenModelReadsBackEqual) {
  SimModel m = load_sim_model(kShipped);
  m.mps.interference = 0.0731;
  m.sources["mps.interference"] = "colo bench collocation, \"GPU 0\" C:\\x, 2026-11-25: 3 pairs";
  m.mig.capacity_3g = 1.0 / 3.0;  // a value with no short decimal form
  const std::string text = write_sim_model(m, "first line\nsecond line");
  EXPECT_THAT(text, ::testing::StartsWith("# first line\n# second line\n"));
  const std::string path = (std::filesystem::temp_directory_path() / "colo-sim-model-written.toml").string();
  std::ofstream(path) << text;
  const SimModel back = load_sim_model(path);
  EXPECT_EQ(back.sources, m.sources);
  EXPECT_EQ(back.mps.interference, 0.0731);
  EXPECT_EQ(back.mig.capacity_3g, 1.0 / 3.0);
  EXPECT_EQ(back.streams.slice_wait, m.streams.slice_wait);
  EXPECT_EQ(back.checkpoint.restore_s, m.checkpoint.restore_s);
  ASSERT_EQ(back.smact.size(), m.smact.size());
  for (const auto& [cls, row] : m.smact) {
    EXPECT_EQ(back.smact.at(cls).at_batch_32, row.at_batch_32) << cls;
    EXPECT_EQ(back.smact.at(cls).per_doubling, row.per_doubling) << cls;
  }
  m.sources.erase("power.max_watts");
  EXPECT_THROW(write_sim_model(m, ""), std::logic_error);
}

}  // namespace
}  // namespace colo::sim
