// TOML job files for `colo submit FILE.toml` (src/daemon/client/job_file.cpp).
#include "daemon/client/job_file.h"
#include "fuzz_common.h"

COLO_FUZZ_TARGET(job_file) {
  const std::string path = colo::fuzz::scratch_file(colo::fuzz::as_text(data, size), "job.toml");
  COLO_FUZZ_EXPECT_USER_ERROR("job_file", (void)colo::daemon::parse_job_file(path));
  return 0;
}
