// A GPU's measured convolution workspace table (src/estimate/trace/conv/conv_workspace_table.cpp):
// read from a calibration directory an administrator may point elsewhere ($COLO_CALIBRATION_DIR),
// so any bytes must end in a UserError or a table, never a crash. A table that reads is then
// indexed for the shapes it lacks (conv_workspace_neighbours.cpp): every key is parsed as a shape
// (conv_shape.cpp) and looked up among the others, and the found steps scaled.
#include <memory>

#include "estimate/trace/conv/conv_workspace_neighbours.h"
#include "estimate/trace/conv/conv_workspace_table.h"
#include "fuzz_common.h"

namespace {

void parse_conv_workspace_table(const std::uint8_t* data, std::size_t size) {
  using namespace colo::estimate;
  auto t = std::make_shared<const ConvWorkspaceTable>(ConvWorkspaceTable::parse(colo::fuzz::as_text(data, size), "fuzz.tsv"));
  (void)t->find("f:1x1x1x1:1x1x1x1:s1x1:p0x0:d1x1:g1:t0:float32:b0");
  const ConvWorkspaceNeighbours index(t);
  t->for_each([&](const std::string& key, const std::vector<ConvWorkspaceStep>&) {
    const auto shape = parse_conv_shape(key);
    if (!shape) return;
    (void)shape->base_bytes();
    for (const auto& n : index.nearest(*shape, 3)) (void)ConvWorkspaceNeighbours::scaled_steps(n, 1ull << 50);
  });
}

}  // namespace

COLO_FUZZ_TARGET(conv_workspace_table) {
  COLO_FUZZ_EXPECT_USER_ERROR("conv_workspace_table", parse_conv_workspace_table(data, size));
  return 0;
}
