#include "core/policy/policies.h"

#include "core/error.h"
#include "core/policy/policy_definition.h"

#include <array>
#include <utility>

namespace colo {

namespace {
constexpr std::array<std::pair<std::string_view, PolicyKind>, 17> kPolicyNames = {{
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
  if (k == PolicyKind::Custom) return "custom";
  for (const auto& [name, kind] : kPolicyNames)
    if (kind == k) return name;
  return "magm";
}

std::optional<PolicyKind> policy_kind_from_string(std::string_view s) {
  for (const auto& [name, kind] : kPolicyNames)
    if (name == s) return kind;
  return std::nullopt;
}

Policy make_policy(PolicyKind kind, const Conditions& c) {
  if (kind == PolicyKind::Custom) throw UserError("a custom policy is built from its definition (build_policy)");
  return build_policy(shipped_policy(kind), c);
}

std::string Policy::describe() const {
  std::string s = name;
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
