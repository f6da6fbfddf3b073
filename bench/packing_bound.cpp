// The simulator's packing bound (sim/bounds/packing_bound.h), computed afresh each iteration
// (no memo): the thesis' traces on 4 GPUs, and the synthetic 100 000-job trace on 2 000 GPUs.
//   build/bench_packing_bound
#include <benchmark/benchmark.h>

#include <string>

#include "sim/bounds/packing_bound.h"
#include "sim/estimator.h"
#include "sim/models/mps_model.h"
#include "sim/workloads/synthetic_trace.h"
#include "sim/workloads/trace.h"
#include "sim/workloads/workload_catalog.h"

namespace {

using namespace colo;
using namespace colo::sim;

std::vector<SimJobSpec> thesis(const std::string& trace) {
  const std::string dir = std::string(COLO_SOURCE_DIR) + "/data/carma/";
  static const WorkloadCatalog catalog = WorkloadCatalog::load(dir + "workloads.csv");
  return jobs_from_trace(load_trace(dir + "traces/" + trace, catalog),
                         make_estimator("oracle", estimator_context_for(dir + "workloads.csv")));
}

void run(benchmark::State& st, const std::vector<SimJobSpec>& jobs, int gpus) {
  PackingBoundSetup s;
  s.gpus = gpus;
  s.gpus_per_node = gpus;
  s.gpu_memory_mib = 40960;
  s.memory_free_s = 30;
  s.origin_s = jobs.front().submit_s;
  s.floor = *make_mps_model()->slowdown_floor();
  std::optional<PackingBound> b;
  for (auto _ : st) {
    b = compute_packing_bound(jobs, s);
    benchmark::DoNotOptimize(b);
  }
  st.counters["bound_s"] = b->value_s;
  st.counters["types"] = b->types;
  st.counters["columns"] = b->columns;
  st.counters["rounds"] = b->rounds;
  st.counters["gap"] = b->gap;
}

void BM_PackingBound_Mix90(benchmark::State& st) { run(st, thesis("philly_mix_90_tasks.csv"), 4); }
void BM_PackingBound_Heavy60(benchmark::State& st) { run(st, thesis("philly_heavy_60_tasks.csv"), 4); }

void BM_PackingBound_100kJobs_2000Gpus(benchmark::State& st) {
  SyntheticParams p;  // as bench_sim_throughput's 3× overload trace
  p.jobs = 100000;
  p.mean_interarrival_s = 0.467;
  p.min_solo_s = 60;
  p.max_solo_s = 4 * 3600;
  p.min_mib = 1000;
  p.max_mib = 30000;
  p.multi_gpu_fraction = 0.1;
  run(st, synthetic_jobs(p, 42), 2000);
}

BENCHMARK(BM_PackingBound_Mix90)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PackingBound_Heavy60)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PackingBound_100kJobs_2000Gpus)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
