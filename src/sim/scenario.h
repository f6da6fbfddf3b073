#pragma once
// One simulated configuration (policy, conditions, estimator, sharing) and the thesis'
// comparison matrix of them (Tables 6.3–6.6: exclusive; round-robin with and without
// conditions; MAGM and LUG without and with each estimator; OFF/OBF/OWF/OLUG with the oracle;
// everything under streams and under MPS), followed by colo's own rules one at a time (MPS).
#include <string>
#include <vector>

#include <optional>

#include "core/policy/policies.h"
#include "core/units.h"
#include "core/policy/policy_definition.h"
#include "sim/models/sharing_model.h"

namespace colo::sim {

// colo's rules beyond the thesis' scheduler, each off by default (docs/SIMULATOR.md).
struct ColoRules {
  bool floor_always = false;    // --floor always
  int backfill = 0;             // --backfill N
  bool recovery_share = false;  // --recovery-share
  Seconds slots = 0;            // --slots L (notice min(600 s, L/10))
  bool adds_progress = false;   // --adds-progress
};

struct Scenario {
  std::string label;  // e.g. "MAGM+horus", "OWF"
  PolicyKind policy = PolicyKind::Magm;
  bool conditions = true;
  std::string estimator = "oracle";
  SharingKind sharing = SharingKind::Mps;
  ColoRules rules;
};

// The thesis' rows, then colo's rules (`colo sim --compare`).
std::vector<Scenario> thesis_matrix();

}  // namespace colo::sim

#include "sim/estimator.h"
#include "sim/simulator.h"
#include "sim/workloads/trace.h"

namespace colo::sim {

// What every scenario of a run shares: the server, the conditions' numbers, recovery, the
// model parameters and the seed.
struct ScenarioBase {
  SimConfig config;               // its scheduler.policy is replaced per scenario
  Conditions conditions;          // cap, margin, min free (enabled is set per scenario)
  EstimatorContext estimators;
  double duration_jitter = 0.0;
  std::uint64_t seed = 0;
  std::optional<PolicyDefinition> custom_policy;  // what a PolicyKind::Custom scenario runs
};

// Builds the scenario's policy and estimates, then simulates the trace.
SimResult run_scenario(const Scenario& sc, const ScenarioBase& base, const Trace& trace);

}  // namespace colo::sim
