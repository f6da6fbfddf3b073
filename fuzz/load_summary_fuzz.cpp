// A summary file of unknown format: load_summary() sniffs the content and dispatches to the
// torchsummary, Keras or module-repr parser (src/estimate/load_summary.cpp), as `colo estimate`
// and `colo submit --estimate` do with a user-named file.
#include "estimate/graph/parsers.h"
#include "fuzz_common.h"

COLO_FUZZ_TARGET(load_summary) {
  const std::string path = colo::fuzz::scratch_file(colo::fuzz::as_text(data, size), "fuzz.model");
  COLO_FUZZ_EXPECT_USER_ERROR("load_summary", (void)colo::estimate::load_summary(path, 0));
  return 0;
}
