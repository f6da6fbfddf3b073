// colo's Slurm settings, colo-slurm.toml (src/slurm/site_settings.cpp): read by every colo
// command on the cluster and by the root-run recovery agent.
#include "fuzz_common.h"
#include "slurm/site_settings.h"

COLO_FUZZ_TARGET(slurm_site) {
  const std::string path = colo::fuzz::scratch_file(colo::fuzz::as_text(data, size), "slurm.toml");
  COLO_FUZZ_EXPECT_USER_ERROR("slurm_site", (void)colo::slurm::load_site_settings(path));
  return 0;
}
