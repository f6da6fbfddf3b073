// One GPUMemNet dataset row (src/estimate/parse_gpumemnet_row.cpp). Input: the Filename field on
// the first line, the Activations-Params list on the rest; parsed as both an MLP and a CNN row.
#include "estimate/graph/parsers.h"
#include "fuzz_common.h"

COLO_FUZZ_TARGET(gpumemnet_row) {
  const std::string_view text = colo::fuzz::as_text(data, size);
  const std::size_t nl = text.find('\n');
  const std::string_view filename = text.substr(0, nl);
  const std::string_view ap = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  using colo::estimate::GpuMemNetKind;
  COLO_FUZZ_EXPECT_USER_ERROR("gpumemnet_row",
                              (void)colo::estimate::parse_gpumemnet_row(filename, ap, GpuMemNetKind::MLP, "fuzz.csv:2"));
  COLO_FUZZ_EXPECT_USER_ERROR("gpumemnet_row",
                              (void)colo::estimate::parse_gpumemnet_row(filename, ap, GpuMemNetKind::CNN, "fuzz.csv:2"));
  return 0;
}
