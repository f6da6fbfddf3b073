#pragma once
// Policies as data (cf. the Kubernetes scheduling framework's profiles): a policy is a name, a
// list of filters by name and one or more scorers with weights. The thesis' policies are shipped
// definitions of this kind (shipped_policies); a site adds its own in colod's config
// (`[policies.NAME]`) or a `colo sim --policy-file`, e.g. memory 0.7 + interference 0.3.
//
// Filters: idle_only (whole GPUs only), fits_memory (the conditions' margin, floor and floor
// rule), smact_below (the measured SMACT window under the conditions' cap), smact_predicted
// (predicted solo SMACT of the placed jobs + the candidate under the cap), adds_progress (a
// co-runner must raise the GPU's predicted progress, filters.h). All but idle_only
// are "conditions": a run without conditions drops them, and a cap of 100 % drops the SMACT ones.
// Scorers: scorers.h scorer_names(). One scorer ranks by its raw score; several by
// Σ weight × normalized score (weights are normalised to sum to 1).
#include <string>
#include <utility>
#include <vector>

#include "core/policy/policies.h"

namespace colo {

struct PolicyDefinition {
  std::string name;
  std::vector<std::string> filters;
  std::vector<std::pair<std::string, double>> scorers;  // name, weight > 0
};

// exclusive, round-robin, first-fit, best-fit, magm, lug, node-weight, as the thesis (and
// colo's Slurm mode) define them.
const std::vector<PolicyDefinition>& shipped_policies();
const PolicyDefinition& shipped_policy(PolicyKind kind);

// Throws colo::UserError naming what is wrong (unknown filter or scorer, no scorer, a weight
// that is not positive and finite, a name that is empty or a shipped policy's).
void validate(const PolicyDefinition& d);

// The policy a definition describes under the given conditions (validates first).
Policy build_policy(const PolicyDefinition& d, const Conditions& conditions);

const std::vector<std::string>& filter_names();

}  // namespace colo
