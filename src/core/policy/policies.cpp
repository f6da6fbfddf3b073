#include "core/policy/policies.h"

#include <array>
#include <utility>

namespace colo {

namespace {
constexpr std::array<std::pair<std::string_view, PolicyKind>, 17> kNames = {{
    {"exclusive", PolicyKind::Exclusive}, {"round-robin", PolicyKind::RoundRobin},
    {"first-fit", PolicyKind::FirstFit},  {"best-fit", PolicyKind::BestFit},
    {"magm", PolicyKind::Magm},           {"lug", PolicyKind::Lug},
    {"rr", PolicyKind::RoundRobin},       {"off", PolicyKind::FirstFit},
    {"obf", PolicyKind::BestFit},         {"mug", PolicyKind::BestFit},
    {"owf", PolicyKind::Magm},            {"worst-fit", PolicyKind::Magm},
    {"olug", PolicyKind::Lug},            {"round_robin", PolicyKind::RoundRobin},
    {"first_fit", PolicyKind::FirstFit},  {"best_fit", PolicyKind::BestFit},
    {"node-weight", PolicyKind::NodeWeight},
}};
}  // namespace

std::string_view to_string(PolicyKind k) {
  for (const auto& [name, kind] : kNames)
    if (kind == k) return name;
  return "magm";
}

std::optional<PolicyKind> policy_kind_from_string(std::string_view s) {
  for (const auto& [name, kind] : kNames)
    if (name == s) return kind;
  return std::nullopt;
}

Policy make_policy(PolicyKind kind, const Conditions& c) {
  Policy p;
  p.kind = kind;
  p.conditions = c;
  if (kind == PolicyKind::Exclusive) {
    p.filters = {idle_only()};
    p.scorer = first();
    return p;
  }
  if (c.enabled) {
    p.filters = {fits_memory(c.margin_mib, c.min_free_unknown_mib, c.floor_always)};
    // A cap of 100 % or more is no SMACT condition (memory only, as Slurm's shards place).
    if (c.smact_cap < 1.0) p.filters.push_back(smact_below(c.smact_cap));
  }
  switch (kind) {
    case PolicyKind::RoundRobin: p.scorer = round_robin(); break;
    case PolicyKind::FirstFit: p.scorer = first(); break;
    case PolicyKind::BestFit: p.scorer = least_free_mem(); break;
    case PolicyKind::Magm: p.scorer = most_free_mem(); break;
    case PolicyKind::Lug: p.scorer = least_smact(); break;
    case PolicyKind::NodeWeight:
      // Slurm places by memory; SM activity reaches it only through the servers' weights.
      p.scorer = lowest_node_weight();
      if (c.enabled) p.filters = {fits_memory(c.margin_mib, c.min_free_unknown_mib, c.floor_always)};
      break;
    case PolicyKind::Exclusive: break;
  }
  return p;
}

std::string Policy::describe() const {
  std::string s(to_string(kind));
  s += ": ";
  if (filters.empty()) s += "(no conditions)";
  for (size_t i = 0; i < filters.size(); ++i) {
    if (i) s += "+";
    s += filters[i]->name();
  }
  s += " -> ";
  s += scorer ? scorer->name() : "none";
  return s;
}

}  // namespace colo
