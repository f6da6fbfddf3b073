// Printed nn.Module trees (src/estimate/parse_module_repr.cpp), e.g. the carma transformer summaries.
#include "estimate/graph/parsers.h"
#include "fuzz_common.h"

COLO_FUZZ_TARGET(module_repr) {
  COLO_FUZZ_EXPECT_USER_ERROR("module_repr",
                              (void)colo::estimate::parse_module_repr(colo::fuzz::as_text(data, size), "fuzz.model", 512));
  return 0;
}
