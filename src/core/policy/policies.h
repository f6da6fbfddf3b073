#pragma once
// A placement policy is a composition: a list of filters and a scorer (cf. the Kubernetes
// scheduling framework's Filter/Score plugins and Nomad's feasibility checkers/rankers). The
// table below is data (policy_definition.cpp shipped_policies); sites add their own.
//
// | policy            | filters                       | scorer         |
// |-------------------|-------------------------------|----------------|
// | exclusive         | idle_only                     | first          |
// | round-robin       | conditions (optional)         | round_robin    |
// | first-fit (OFF)   | fits_memory, smact_below      | first          |
// | best-fit (OBF/MUG)| fits_memory, smact_below      | least_free_mem |
// | magm (OWF)        | fits_memory, smact_below      | most_free_mem  |
// | lug (OLUG)        | fits_memory, smact_below      | least_smact    |
// | node-weight       | fits_memory                   | lowest_node_weight (Slurm + colo slurm node-weight) |
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/policy/filters.h"
#include "core/policy/scorers.h"

namespace colo {

enum class PolicyKind { Exclusive, RoundRobin, FirstFit, BestFit, Magm, Lug, NodeWeight, Custom };
std::string_view to_string(PolicyKind k);
// Accepts the CLI names (exclusive, round-robin, first-fit, best-fit, magm, lug) and the
// thesis' aliases (rr, off, obf, mug, owf, worst-fit, olug).
std::optional<PolicyKind> policy_kind_from_string(std::string_view s);

// The collocation conditions (thesis defaults).
struct Conditions {
  bool enabled = true;
  double smact_cap = 0.80;               // ≥ 1.0: no SMACT condition (memory only)
  MiB margin_mib = 2 * kGiB;            // on top of a known or estimated need
  MiB min_free_unknown_mib = 5 * kGiB;  // when the need is unknown (smallest MIG slice)
  // The free-memory floor holds for known needs too: available ≥ max(need + margin, floor). An
  // estimate that is far too small (FakeTensor's live tensors) then cannot stack jobs into OOMs.
  bool floor_always = false;
  // Every policy that collocates also applies the adds_progress filter (filters.h), with
  // `interference` per co-runner (the sharing model's: MPS 0.05, docs/SIMULATOR.md).
  bool adds_progress = false;
  double interference = 0.05;
};

struct Policy {
  PolicyKind kind = PolicyKind::Magm;  // Custom for a site's own definition
  std::string name = "magm";
  Conditions conditions;
  std::vector<FilterPtr> filters;
  ScorerPtr scorer;
  bool whole_gpus = false;    // an idle_only policy: its placements run alone (exclusive)
  bool checks_memory = false;  // a fits_memory filter is in force (the scheduler's free-memory bounds rest on it)
  bool node_weights = false;  // a scorer reads Candidate::node_weight (the scheduler ranks servers)
  std::optional<double> smact_cap;  // set when a smact_below filter is in force (the simulator wakes on it)
  std::string describe() const;  // e.g. "magm: fits_memory+smact_below -> most_free_mem"
};

// A shipped policy (policy_definition.h shipped_policies) under the given conditions.
Policy make_policy(PolicyKind kind, const Conditions& conditions = {});

}  // namespace colo
