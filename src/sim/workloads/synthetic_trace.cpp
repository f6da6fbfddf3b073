#include "sim/workloads/synthetic_trace.h"

#include <cmath>
#include <random>

#include <fmt/format.h>

namespace colo::sim {

std::vector<SimJobSpec> synthetic_jobs(const SyntheticParams& p, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::exponential_distribution<double> gap(1.0 / p.mean_interarrival_s);
  auto log_uniform = [&](double lo, double hi) { return std::exp(std::log(lo) + u(rng) * (std::log(hi) - std::log(lo))); };
  std::vector<SimJobSpec> out;
  out.reserve(p.jobs);
  Seconds t = 0;
  for (std::size_t i = 0; i < p.jobs; ++i) {
    SimJobSpec j;
    if (i > 0) t += std::round(gap(rng));  // whole seconds, like the Philly-derived traces
    j.submit_s = t;
    j.gpus = (p.max_gpus_per_job >= 2 && u(rng) < p.multi_gpu_fraction) ? 2 : 1;
    j.solo_s = std::round(log_uniform(p.min_solo_s, p.max_solo_s));
    j.true_mib = static_cast<MiB>(std::llround(log_uniform(static_cast<double>(p.min_mib), static_cast<double>(p.max_mib))));
    j.smact = 0.1 + 0.85 * u(rng);
    j.name = fmt::format("syn{}", i);
    const double r = u(rng);
    if (r < p.p_unknown) {
      j.need = MemoryNeed::unknown();
    } else if (r < p.p_unknown + p.p_under) {
      j.need = MemoryNeed::of(static_cast<MiB>(static_cast<double>(j.true_mib) * (0.3 + 0.6 * u(rng))), "synthetic-low");
    } else if (r < p.p_unknown + p.p_under + p.p_over) {
      j.need = MemoryNeed::of(static_cast<MiB>(static_cast<double>(j.true_mib) * (1.1 + 0.9 * u(rng))), "synthetic-high");
    } else {
      j.need = MemoryNeed::of(j.true_mib, "oracle");
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace colo::sim
