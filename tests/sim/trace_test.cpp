#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "data_path.h"
#include "sim/workloads/trace.h"

namespace colo::sim {
namespace {

using ::testing::HasSubstr;

std::string trace_error(const WorkloadCatalog& c, const std::string& text) {
  try {
    parse_trace(text, "t.csv", c);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Trace, ReadsBothThesisTraces) {
  const auto c = WorkloadCatalog::load(test::carma("workloads.csv"));
  const auto mix = load_trace(test::carma("traces/philly_mix_90_tasks.csv"), c);
  ASSERT_EQ(mix.entries.size(), 90u);
  EXPECT_EQ(mix.entries[0].workload->name, "gpt2_large_2");
  EXPECT_EQ(mix.entries[1].submit_s, 73);
  EXPECT_EQ(mix.entries[1].line, 3);
  const auto heavy = load_trace(test::carma("traces/philly_heavy_60_tasks.csv"), c);
  EXPECT_EQ(heavy.entries.size(), 60u);
}

TEST(Trace, BadInputNamesFileAndLine) {
  const auto c = WorkloadCatalog::load(test::carma("workloads.csv"));
  const std::string h = "submit_offset_s,workload\n";
  EXPECT_EQ(trace_error(c, h + "0,resnet\n5,vgg\n5,vgg2\n"), "(no error)");
  EXPECT_THAT(trace_error(c, h + "0,resnet\n5,nosuchmodel\n"), HasSubstr("t.csv:3: unknown workload 'nosuchmodel'"));
  EXPECT_THAT(trace_error(c, h + "-1,resnet\n"), HasSubstr("t.csv:2: negative submit_offset_s -1"));
  EXPECT_THAT(trace_error(c, h + "10,resnet\n5,vgg\n"), HasSubstr("t.csv:3: submit_offset_s 5 is earlier"));
  EXPECT_THAT(trace_error(c, h + "abc,resnet\n"), HasSubstr("t.csv:2: column 'submit_offset_s': 'abc' is not a number"));
  EXPECT_THAT(trace_error(c, h + "inf,resnet\n"), HasSubstr("t.csv:2: column 'submit_offset_s': 'inf' is not a number"));
  EXPECT_THAT(trace_error(c, "offset,workload\n0,resnet\n"), HasSubstr("t.csv:1: missing column 'submit_offset_s'"));
  EXPECT_THAT(trace_error(c, h), HasSubstr("t.csv: the trace has no jobs"));
  // A column the reader does not know (a misspelling, a column of another tool) would be ignored.
  EXPECT_THAT(trace_error(c, "submit_offset_s,workload,gpus\n0,resnet,2\n"),
              HasSubstr("t.csv:1: unknown column 'gpus' (known: submit_offset_s, workload)"));
  EXPECT_THAT(trace_error(c, h + "0,resnet,extra\n"), HasSubstr("t.csv:2: 3 fields, the header has 2"));
  EXPECT_THAT(trace_error(c, ""), HasSubstr("t.csv: empty file"));
}

}  // namespace
}  // namespace colo::sim
