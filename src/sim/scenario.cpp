#include "sim/scenario.h"

#include "core/error.h"

namespace colo::sim {

std::vector<Scenario> thesis_matrix() {
  std::vector<Scenario> base = {
      {"exclusive", PolicyKind::Exclusive, false, "none", SharingKind::Mps},
      {"RR (no condition)", PolicyKind::RoundRobin, false, "none", SharingKind::Mps},
      {"RR", PolicyKind::RoundRobin, true, "none", SharingKind::Mps},
  };
  for (PolicyKind p : {PolicyKind::Magm, PolicyKind::Lug}) {
    const std::string name = p == PolicyKind::Magm ? "MAGM" : "LUG";
    base.push_back({name, p, true, "none", SharingKind::Mps});
    for (const char* e : {"horus", "faketensor", "gpumemnet-csv", "allocsim"})
      base.push_back({name + "+" + e, p, true, e, SharingKind::Mps});
  }
  base.push_back({"OFF", PolicyKind::FirstFit, true, "oracle", SharingKind::Mps});
  base.push_back({"OBF", PolicyKind::BestFit, true, "oracle", SharingKind::Mps});
  base.push_back({"OWF", PolicyKind::Magm, true, "oracle", SharingKind::Mps});
  base.push_back({"OLUG", PolicyKind::Lug, true, "oracle", SharingKind::Mps});
  std::vector<Scenario> out;
  for (SharingKind s : {SharingKind::Streams, SharingKind::Mps})
    for (Scenario sc : base) {
      sc.sharing = s;
      out.push_back(sc);
    }
  return out;
}

}  // namespace colo::sim

namespace colo::sim {

SimResult run_scenario(const Scenario& sc, const ScenarioBase& base, const Trace& trace) {
  SimConfig cfg = base.config;
  Conditions c = base.conditions;
  c.enabled = sc.conditions;
  if (sc.policy == PolicyKind::Custom && !base.custom_policy)
    throw UserError("scenario '" + sc.label + "': a custom policy needs its definition");
  cfg.scheduler.policy = sc.policy == PolicyKind::Custom ? build_policy(*base.custom_policy, c) : make_policy(sc.policy, c);
  cfg.sharing = sc.sharing;
  const Estimator est = make_estimator(sc.estimator, base.estimators);
  const std::vector<SimJobSpec> jobs = jobs_from_trace(trace, est, base.duration_jitter, base.seed);
  return simulate(cfg, jobs);
}

}  // namespace colo::sim
