#include "daemon/client/policy_file.h"

#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "core/one_line.h"

namespace colo::daemon {

std::vector<PolicyDefinition> read_policy_definitions(const toml::table& policies, const TomlReader& r) {
  std::vector<PolicyDefinition> out;
  for (const auto& [nk, node] : policies) {
    PolicyDefinition d;
    d.name = std::string(nk.str());
    const std::string where = "policies." + d.name;
    if (policy_kind_from_string(d.name))
      r.bad(node, fmt::format("'{}': '{}' is a shipped policy; give yours another name", where, d.name));
    const toml::table& t = r.table(node, where);
    bool have_scorers = false;
    for (const auto& [kk, n] : t) {
      const std::string k(kk.str());
      if (k == "filters") {
        const toml::array* a = n.as_array();
        if (!a) r.bad(n, fmt::format("'{}.filters' must be an array of filter names", where));
        for (const toml::node& e : *a) d.filters.push_back(r.str(e, where + ".filters"));
      } else if (k == "scorers") {
        const toml::table& s = r.table(n, where + ".scorers");
        for (const auto& [sk, w] : s)
          d.scorers.emplace_back(std::string(sk.str()), r.number(w, where + ".scorers." + std::string(sk.str()), 1e-9, 1e9));
        have_scorers = true;
      } else {
        r.bad(n, fmt::format("unknown key '{}.{}' (filters, scorers)", where, k));
      }
    }
    if (!have_scorers) r.bad(node, fmt::format("'{}' needs scorers = {{ NAME = WEIGHT, ... }}", where));
    try {
      validate(d);
    } catch (const UserError& e) {
      r.bad(node, e.what());
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<PolicyDefinition> load_policy_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UserError(fmt::format("{}: is a directory, not a policy file", path));
  if (!std::filesystem::exists(path, ec)) throw UserError(fmt::format("{}: no such policy file", path));
  const toml::table t = parse_toml_file(path);
  const TomlReader r{path};
  std::vector<PolicyDefinition> out;
  for (const auto& [k, n] : t) {
    if (k.str() != "policies") r.bad(n, fmt::format("unknown table '{}' (a policy file holds [policies.NAME] tables)", k.str()));
    out = read_policy_definitions(r.table(n, "policies"), r);
  }
  if (out.empty()) throw UserError(fmt::format("{}: defines no policy ([policies.NAME])", path));
  return out;
}

bool policy_exists(const std::string& name, const std::vector<PolicyDefinition>& site) {
  for (const auto& d : site)
    if (d.name == name) return true;
  return policy_kind_from_string(name).has_value();
}

Policy resolve_policy(const std::string& name, const std::vector<PolicyDefinition>& site, const Conditions& c) {
  for (const auto& d : site)
    if (d.name == name) return build_policy(d, c);
  if (auto k = policy_kind_from_string(name)) return make_policy(*k, c);
  std::string known = "exclusive, round-robin, first-fit, best-fit, magm, lug, node-weight";
  for (const auto& d : site) known += ", " + d.name;
  throw UserError(fmt::format("unknown policy '{}' (known: {})", one_line(name), known));
}

}  // namespace colo::daemon
