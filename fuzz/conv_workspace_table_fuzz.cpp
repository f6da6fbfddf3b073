// A GPU's measured convolution workspace table (src/estimate/trace/conv_workspace_table.cpp): read
// from a calibration directory an administrator may point elsewhere ($COLO_CALIBRATION_DIR), so
// any bytes must end in a UserError or a table, never a crash.
#include "estimate/trace/conv_workspace_table.h"
#include "fuzz_common.h"

namespace {

void parse(const std::uint8_t* data, std::size_t size) {
  const auto t = colo::estimate::ConvWorkspaceTable::parse(colo::fuzz::as_text(data, size), "fuzz.tsv");
  (void)t.find("f:1x1x1x1:1x1x1x1:s1x1:p0x0:d1x1:g1:t0:float32:b0");
  (void)t.size();
}

}  // namespace

COLO_FUZZ_TARGET(conv_workspace_table) {
  COLO_FUZZ_EXPECT_USER_ERROR("conv_workspace_table", parse(data, size));
  return 0;
}
