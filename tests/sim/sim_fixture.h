#pragma once
// Helpers shared by the simulator tests.
#include <string>
#include <vector>

#include "core/scheduler.h"
#include "data_path.h"
#include "sim/estimator.h"
#include "sim/simulator.h"
#include "sim/workloads/trace.h"
#include "sim/workloads/workload_catalog.h"

namespace colo::sim::test {

inline SimConfig config(PolicyKind policy, int gpus = 4, bool conditions = true,
                        SharingKind sharing = SharingKind::Mps, RecoveryMode rec = RecoveryMode::Strict) {
  SimConfig c;
  c.gpus = gpus;
  Conditions cond;
  cond.enabled = conditions;
  c.scheduler.policy = make_policy(policy, cond);
  c.scheduler.recovery.mode = rec;
  c.sharing = sharing;
  return c;
}

inline std::vector<SimJobSpec> thesis_jobs(const std::string& trace, const std::string& estimator) {
  static const WorkloadCatalog catalog = WorkloadCatalog::load(carma("workloads.csv"));
  const Trace t = load_trace(carma("traces/" + trace), catalog);
  return jobs_from_trace(t, make_estimator(estimator, estimator_context_for(carma("workloads.csv"))));
}

}  // namespace colo::sim::test
