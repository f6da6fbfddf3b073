// Site policy files (`colo sim --policy-file`, src/daemon/client/policy_file.cpp): TOML an
// administrator writes. Any bytes must end in a UserError or definitions that validate; each
// definition read is then built under conditions and resolved by name, as colod and colo sim do.
#include "daemon/client/policy_file.h"
#include "fuzz_common.h"

namespace {

void parse_policy_file(const std::uint8_t* data, std::size_t size) {
  const std::string path = colo::fuzz::scratch_file(colo::fuzz::as_text(data, size), "policies.toml");
  const auto site = colo::daemon::load_policy_file(path);
  colo::Conditions c;
  c.enabled = true;
  c.adds_progress = true;
  for (const auto& d : site) {
    (void)colo::build_policy(d, c);
    (void)colo::daemon::resolve_policy(d.name, site, c);
  }
}

}  // namespace

COLO_FUZZ_TARGET(policy_file) {
  COLO_FUZZ_EXPECT_USER_ERROR("policy_file", parse_policy_file(data, size));
  return 0;
}
