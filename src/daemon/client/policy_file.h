#pragma once
// Site policies as data, read from TOML (colod's config and `colo sim --policy-file`):
//
//   [policies.blend]
//   filters = ["fits_memory", "smact_below"]
//   scorers = { most_free_mem = 0.7, least_smact = 0.3 }
//
// and resolving a policy name against them and the shipped policies (core/policy/policy_definition.h).
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "core/policy/policy_definition.h"
#include "daemon/client/toml_reader.h"

namespace colo::daemon {

// The definitions in a `[policies]` table; errors name the file, line and key.
std::vector<PolicyDefinition> read_policy_definitions(const toml::table& policies, const TomlReader& r);

// A file whose only top-level table is `[policies]` (sub-tables per policy).
std::vector<PolicyDefinition> load_policy_file(const std::string& path);

// NAME among `site` definitions, else a shipped policy or alias; UserError listing what exists.
Policy resolve_policy(const std::string& name, const std::vector<PolicyDefinition>& site, const Conditions& c);
bool policy_exists(const std::string& name, const std::vector<PolicyDefinition>& site);

}  // namespace colo::daemon
