#include "sim/sim_job.h"

#include <random>

namespace colo::sim {

std::vector<SimJobSpec> jobs_from_trace(const Trace& trace, const Estimator& estimate, double jitter,
                                        std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(1.0 - jitter, 1.0 + jitter);
  std::vector<SimJobSpec> out;
  out.reserve(trace.entries.size());
  for (const TraceEntry& e : trace.entries) {
    const Workload& w = *e.workload;
    SimJobSpec j;
    j.name = w.name;
    j.submit_s = e.submit_s;
    j.gpus = w.gpus;
    j.true_mib = w.true_mib;
    j.solo_s = w.solo_seconds * (jitter > 0 ? u(rng) : 1.0);
    j.smact = w.smact;
    j.busy = w.busy.value_or(-1.0);
    j.need = estimate(w);
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace colo::sim
