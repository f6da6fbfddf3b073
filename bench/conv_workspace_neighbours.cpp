// Shapes the workspace table lacks (src/estimate/trace/conv/conv_workspace_neighbours.h): indexing
// the shipped H100 table (once per process in colo, colod and `estimate eval`) and one lookup of a
// shape's 3 nearest measured shapes (once per distinct unmeasured shape of a trace).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "estimate/trace/conv/conv_workspace_neighbours.h"

namespace {

using namespace colo::estimate;

std::shared_ptr<const ConvWorkspaceTable> h100_table() {
  static const auto t = load_conv_workspace_table(std::string(COLO_SOURCE_DIR) + "/calibration/h100-80gb.conv-workspace.tsv");
  return t;
}

void BM_ConvNeighboursIndex(benchmark::State& st) {
  const auto t = h100_table();
  for (auto _ : st) benchmark::DoNotOptimize(ConvWorkspaceNeighbours(t).indexed());
  st.counters["keys"] = static_cast<double>(t->size());
}
BENCHMARK(BM_ConvNeighboursIndex)->Unit(benchmark::kMillisecond);

// A backward 3x3 convolution of a GPUMemNet residual row the table never saw (the largest class).
void BM_ConvNeighboursNearest(benchmark::State& st) {
  const ConvWorkspaceNeighbours n(h100_table());
  const auto s = parse_conv_shape("b:8x68x104x104:68x68x3x3:s1x1:p1x1:d1x1:g1:t0:float32:m111");
  for (auto _ : st) benchmark::DoNotOptimize(n.nearest(*s, 3).size());
}
BENCHMARK(BM_ConvNeighboursNearest)->Unit(benchmark::kMicrosecond);

}  // namespace
