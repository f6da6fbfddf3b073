// colod's configuration (/etc/colo/colod.toml, src/daemon/config.cpp): any bytes must end in a
// UserError "FILE:LINE: …" or a configuration colod would start with; the adds_progress check
// colod runs at start-up is asked too.
#include "daemon/config.h"
#include "fuzz_common.h"

namespace {

void parse_daemon_config(const std::uint8_t* data, std::size_t size) {
  const std::string path = colo::fuzz::scratch_file(colo::fuzz::as_text(data, size), "colod.toml");
  const colo::daemon::DaemonConfig cfg = colo::daemon::load_config(path);
  (void)colo::daemon::policy_problem(cfg);
}

}  // namespace

COLO_FUZZ_TARGET(daemon_config) {
  COLO_FUZZ_EXPECT_USER_ERROR("daemon_config", parse_daemon_config(data, size));
  return 0;
}
