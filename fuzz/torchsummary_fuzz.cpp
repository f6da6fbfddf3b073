// torchsummary tables (src/estimate/parse_torchsummary.cpp).
#include "estimate/graph/parsers.h"
#include "fuzz_common.h"

COLO_FUZZ_TARGET(torchsummary) {
  COLO_FUZZ_EXPECT_USER_ERROR("torchsummary",
                              (void)colo::estimate::parse_torchsummary(colo::fuzz::as_text(data, size), "fuzz.model"));
  return 0;
}
