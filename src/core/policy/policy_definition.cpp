#include "core/policy/policy_definition.h"

#include <algorithm>
#include <set>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "core/one_line.h"

namespace colo {

namespace {

constexpr const char* kConditions[] = {"fits_memory", "smact_below", "smact_predicted", "adds_progress"};

PolicyDefinition def(std::string name, std::vector<std::string> filters, std::string scorer) {
  return {std::move(name), std::move(filters), {{std::move(scorer), 1.0}}};
}

}  // namespace

const std::vector<std::string>& filter_names() {
  static const std::vector<std::string> names = {"idle_only", "fits_memory", "smact_below", "smact_predicted",
                                                  "adds_progress"};
  return names;
}

const std::vector<PolicyDefinition>& shipped_policies() {
  static const std::vector<PolicyDefinition> all = {
      def("exclusive", {"idle_only"}, "first"),
      def("round-robin", {"fits_memory", "smact_below"}, "round_robin"),
      def("first-fit", {"fits_memory", "smact_below"}, "first"),
      def("best-fit", {"fits_memory", "smact_below"}, "least_free_mem"),
      def("magm", {"fits_memory", "smact_below"}, "most_free_mem"),
      def("lug", {"fits_memory", "smact_below"}, "least_smact"),
      // Slurm places by memory; SM activity reaches it only through the servers' weights.
      def("node-weight", {"fits_memory"}, "lowest_node_weight"),
  };
  return all;
}

const PolicyDefinition& shipped_policy(PolicyKind kind) {
  const std::string_view name = to_string(kind);
  for (const auto& d : shipped_policies())
    if (d.name == name) return d;
  throw UserError(fmt::format("no shipped policy '{}'", name));
}

void validate(const PolicyDefinition& d) {
  if (d.name.empty()) throw UserError("a policy needs a name");
  const std::string where = fmt::format("policy '{}'", one_line(d.name));
  // The name is a flag's value, a config value, a report's and a metric label's text.
  const bool plain = d.name.size() <= 64 && std::all_of(d.name.begin(), d.name.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
           ch == '_' || ch == '.';
  });
  if (!plain)
    throw UserError(fmt::format("{}: a policy name is 1 to 64 letters, digits, '-', '_' or '.'", where));
  std::set<std::string> seen;
  for (const std::string& f : d.filters) {
    if (std::find(filter_names().begin(), filter_names().end(), f) == filter_names().end())
      throw UserError(fmt::format("{}: unknown filter '{}' (known: idle_only, fits_memory, smact_below, smact_predicted, adds_progress)", where, one_line(f)));
    if (!seen.insert(f).second) throw UserError(fmt::format("{}: filter '{}' is listed twice", where, f));
  }
  if (d.scorers.empty()) throw UserError(fmt::format("{}: needs at least one scorer", where));
  for (const auto& [s, w] : d.scorers) {
    if (!scorer_by_name(s))
      throw UserError(fmt::format("{}: unknown scorer '{}' (known: first, round_robin, most_free_mem, least_free_mem, "
                                  "least_smact, lowest_node_weight)",
                                  where, one_line(s)));
    if (!(w > 0) || !std::isfinite(w))
      throw UserError(fmt::format("{}: scorer '{}' has weight {}; weights must be positive and finite", where, s, w));
  }
}

Policy build_policy(const PolicyDefinition& d, const Conditions& c) {
  validate(d);
  Policy p;
  p.name = d.name;
  p.conditions = c;
  const auto kind = policy_kind_from_string(d.name);
  p.kind = kind ? *kind : PolicyKind::Custom;
  for (const std::string& f : d.filters) {
    const bool condition = std::find(std::begin(kConditions), std::end(kConditions), f) != std::end(kConditions);
    if (condition && !c.enabled) continue;
    if (f == "idle_only") {
      p.filters.push_back(idle_only());
      p.whole_gpus = true;
    } else if (f == "fits_memory") {
      p.filters.push_back(fits_memory(c.margin_mib, c.min_free_unknown_mib, c.floor_always));
      p.checks_memory = true;
    } else if (f == "smact_below" && c.smact_cap < 1.0) {  // a cap of 100 % or more: memory only
      p.filters.push_back(smact_below(c.smact_cap));
      p.smact_cap = c.smact_cap;
    } else if (f == "smact_predicted" && c.smact_cap < 1.0) {
      p.filters.push_back(smact_predicted(c.smact_cap));
    } else if (f == "adds_progress") {
      p.filters.push_back(adds_progress(c.interference));
    }
  }
  const bool listed = std::find(d.filters.begin(), d.filters.end(), "adds_progress") != d.filters.end();
  if (c.enabled && c.adds_progress && !p.whole_gpus && !listed) p.filters.push_back(adds_progress(c.interference));
  if (d.scorers.size() == 1) {
    p.scorer = scorer_by_name(d.scorers[0].first);
  } else {
    std::vector<std::pair<ScorerPtr, double>> parts;
    for (const auto& [s, w] : d.scorers) parts.emplace_back(scorer_by_name(s), w);
    p.scorer = weighted(std::move(parts));
  }
  for (const auto& [s, w] : d.scorers) p.node_weights = p.node_weights || s == "lowest_node_weight";
  return p;
}

}  // namespace colo
