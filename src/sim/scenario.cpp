#include "sim/scenario.h"

#include <algorithm>

#include "core/error.h"

namespace colo::sim {

namespace {
Scenario row(std::string label, PolicyKind p, bool conditions, std::string estimator, ColoRules rules = {}) {
  Scenario sc;
  sc.label = std::move(label);
  sc.policy = p;
  sc.conditions = conditions;
  sc.estimator = std::move(estimator);
  sc.rules = rules;
  return sc;
}
}  // namespace

std::vector<Scenario> thesis_matrix() {
  std::vector<Scenario> base = {
      row("exclusive", PolicyKind::Exclusive, false, "none"),
      row("RR (no condition)", PolicyKind::RoundRobin, false, "none"),
      row("RR", PolicyKind::RoundRobin, true, "none"),
  };
  for (PolicyKind p : {PolicyKind::Magm, PolicyKind::Lug}) {
    const std::string name = p == PolicyKind::Magm ? "MAGM" : "LUG";
    base.push_back(row(name, p, true, "none"));
    for (const char* e : {"horus", "faketensor", "gpumemnet-csv", "allocsim"}) base.push_back(row(name + "+" + e, p, true, e));
  }
  base.push_back(row("OFF", PolicyKind::FirstFit, true, "oracle"));
  base.push_back(row("OBF", PolicyKind::BestFit, true, "oracle"));
  base.push_back(row("OWF", PolicyKind::Magm, true, "oracle"));
  base.push_back(row("OLUG", PolicyKind::Lug, true, "oracle"));
  std::vector<Scenario> out;
  for (SharingKind s : {SharingKind::Streams, SharingKind::Mps})
    for (Scenario sc : base) {
      sc.sharing = s;
      out.push_back(sc);
    }
  // colo's rules, one at a time, on MPS with colo's own estimator (or, for joining a recovered
  // job, the estimator that under-estimates and so crashes).
  ColoRules r;
  r.floor_always = true;
  out.push_back(row("MAGM+allocsim floor", PolicyKind::Magm, true, "allocsim", r));
  r = {};
  r.backfill = 10;
  out.push_back(row("MAGM+allocsim bf10", PolicyKind::Magm, true, "allocsim", r));
  r = {};
  r.slots = 3600;
  out.push_back(row("MAGM+allocsim slot1h", PolicyKind::Magm, true, "allocsim", r));
  r = {};
  r.adds_progress = true;
  out.push_back(row("MAGM+allocsim progress", PolicyKind::Magm, true, "allocsim", r));
  r = {};
  r.recovery_share = true;
  out.push_back(row("MAGM+faketensor share", PolicyKind::Magm, true, "faketensor", r));
  return out;
}

}  // namespace colo::sim

namespace colo::sim {

SimResult run_scenario(const Scenario& sc, const ScenarioBase& base, const Trace& trace) {
  SimConfig cfg = base.config;
  Conditions c = base.conditions;
  c.enabled = sc.conditions;
  if (sc.rules.floor_always) c.floor_always = true;
  if (sc.rules.adds_progress) c.adds_progress = true;
  // adds_progress weighs a co-runner with the sharing model's own cost of one.
  c.interference = sc.sharing == SharingKind::Streams ? cfg.streams.switch_overhead : cfg.mps.interference;
  if (sc.rules.backfill > 0) cfg.scheduler.backfill.max_overtakes = sc.rules.backfill;
  if (sc.rules.recovery_share) cfg.scheduler.recovery.share_after_peak = true;
  if (sc.rules.slots > 0) cfg.slots = TimeSlots{sc.rules.slots, std::min(600.0, sc.rules.slots / 10)};
  if (sc.policy == PolicyKind::Custom && !base.custom_policy)
    throw UserError("scenario '" + sc.label + "': a custom policy needs its definition");
  cfg.scheduler.policy = sc.policy == PolicyKind::Custom ? build_policy(*base.custom_policy, c) : make_policy(sc.policy, c);
  cfg.sharing = sc.sharing;
  const Estimator est = make_estimator(sc.estimator, base.estimators);
  const std::vector<SimJobSpec> jobs = jobs_from_trace(trace, est, base.duration_jitter, base.seed);
  return simulate(cfg, jobs);
}

}  // namespace colo::sim
