// Estimator speed: allocsim end to end on ResNet-50's summary (target <= 10 ms), the caching-
// allocator replay alone (target >= 10 M events/s), and summary parsing.
#include <benchmark/benchmark.h>

#include <limits>
#include <string>

#include "estimate/allocator/allocsim.h"
#include "estimate/estimator.h"
#include "estimate/graph/parsers.h"
#include "estimate/allocator/training_trace.h"

namespace {

using namespace colo::estimate;

const std::string kResNet50 = std::string(COLO_SOURCE_DIR) + "/data/carma/summaries/resnet50_32.model";

// Summary already parsed: graph -> trace -> replay -> estimate (what the daemon pays per job).
void BM_AllocsimResNet50(benchmark::State& st) {
  const auto g = load_summary(kResNet50);
  auto est = make_estimator("allocsim");
  EstimateRequest r;
  r.graph = &g;
  r.batch = 32;
  r.optimizer = Optimizer::Adam;
  for (auto _ : st) benchmark::DoNotOptimize(est->estimate(r).mib);
}
BENCHMARK(BM_AllocsimResNet50)->Unit(benchmark::kMillisecond);

// The same including reading and parsing the summary file.
void BM_AllocsimResNet50FromFile(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(estimate_from_summary(kResNet50, 32, "adam", "allocsim").mib);
}
BENCHMARK(BM_AllocsimResNet50FromFile)->Unit(benchmark::kMillisecond);

// Replay throughput: the synthesised trace of N ResNet-50 training iterations through a fresh
// caching allocator; items = allocator events (malloc or free).
void replay_throughput(benchmark::State& st, const AllocatorSettings& settings) {
  const auto g = load_summary(kResNet50);
  TraceOptions o;
  o.batch = 32;
  o.optimizer = Optimizer::Adam;
  o.iterations = static_cast<int>(st.range(0));
  const auto trace = synthesize_training_trace(g, o);
  for (auto _ : st)
    benchmark::DoNotOptimize(replay(trace, std::numeric_limits<std::uint64_t>::max(), settings).reserved_peak);
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(trace.size()));
  st.counters["events"] = static_cast<double>(trace.size());
}

void BM_CachingAllocatorReplay(benchmark::State& st) { replay_throughput(st, {}); }
BENCHMARK(BM_CachingAllocatorReplay)->Arg(3)->Arg(50);

// The same under PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (pages mapped and merged).
void BM_CachingAllocatorReplayExpandable(benchmark::State& st) {
  replay_throughput(st, parse_allocator_settings("expandable_segments:True"));
}
BENCHMARK(BM_CachingAllocatorReplayExpandable)->Arg(3)->Arg(50);

void BM_ParseTorchSummaryResNet50(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(load_summary(kResNet50).layers.size());
}
BENCHMARK(BM_ParseTorchSummaryResNet50)->Unit(benchmark::kMicrosecond);

}  // namespace
