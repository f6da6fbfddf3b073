// The research prototype's .rad job files (src/daemon/client/rad_file.cpp).
#include "daemon/client/rad_file.h"
#include "fuzz_common.h"

COLO_FUZZ_TARGET(rad_file) {
  const std::string path = colo::fuzz::scratch_file(colo::fuzz::as_text(data, size), "job.rad");
  COLO_FUZZ_EXPECT_USER_ERROR("rad_file", (void)colo::daemon::parse_rad_file(path));
  return 0;
}
