// GPUMemNet inference speed (target: <= 1 ms per estimate). Measures one estimate through the
// estimator interface (features from a ResNet-50-sized graph, and from the real ResNet-50 summary,
// + the 4-member ensemble, model file already loaded), the ensemble alone, and loading a model file.
#include <benchmark/benchmark.h>

#include <string>

#include "estimate/gpumemnet/gpumemnet.h"
#include "estimate/graph/parsers.h"

namespace {

using namespace colo::estimate;

// A ResNet-50-sized CNN graph: 53 convs with batch norms and ReLUs, pooling and a classifier.
ModelGraph resnet50_like() {
  ModelGraph g;
  g.name = "resnet50-like";
  g.family = ModelFamily::CNN;
  g.activation = "relu";
  auto add = [&](LayerKind k, std::vector<std::int64_t> shape, std::int64_t params) {
    Layer l;
    l.kind = k;
    l.out_shape = std::move(shape);
    l.params = params;
    g.layers.push_back(std::move(l));
  };
  std::int64_t c = 64, hw = 56;
  for (int i = 0; i < 53; ++i) {
    if (i == 13 || i == 26 || i == 39) {
      c *= 2;
      hw /= 2;
    }
    add(LayerKind::Conv, {c, hw, hw}, c * c * 9);
    add(LayerKind::BatchNorm, {c, hw, hw}, 2 * c);
    add(LayerKind::ReLU, {c, hw, hw}, 0);
  }
  add(LayerKind::AdaptiveAvgPool, {c, 1, 1}, 0);
  add(LayerKind::Linear, {1000}, c * 1000 + 1000);
  return g;
}

const std::string kModels = std::string(COLO_SOURCE_DIR) + "/models/gpumemnet";

void BM_GpuMemNetEstimate(benchmark::State& state) {
  const ModelGraph g = resnet50_like();
  auto est = make_gpumemnet_estimator(kModels, 0);
  EstimateRequest req;
  req.graph = &g;
  req.batch = 32;
  est->estimate(req);  // loads and caches the model file
  for (auto _ : state) benchmark::DoNotOptimize(est->estimate(req).mib);
}
BENCHMARK(BM_GpuMemNetEstimate)->Unit(benchmark::kMicrosecond);

// The same on the real ResNet-50 torchsummary of the carma workloads (parsed once, outside the loop).
void BM_GpuMemNetEstimateResNet50Summary(benchmark::State& state) {
  const ModelGraph g = load_summary(std::string(COLO_SOURCE_DIR) + "/data/carma/summaries/resnet50_32.model");
  auto est = make_gpumemnet_estimator(kModels, 0);
  EstimateRequest req;
  req.graph = &g;
  req.batch = 32;
  est->estimate(req);
  for (auto _ : state) benchmark::DoNotOptimize(est->estimate(req).mib);
}
BENCHMARK(BM_GpuMemNetEstimateResNet50Summary)->Unit(benchmark::kMicrosecond);

void BM_GpuMemNetEnsembleOnly(benchmark::State& state) {
  const auto model = GpuMemNetModel::load(kModels + "/cnn-8gib.json");
  const Eigen::MatrixXd f = gpumemnet_features(gpumemnet_inputs(resnet50_like(), 32));
  for (auto _ : state) benchmark::DoNotOptimize(model.predict(f).front());
}
BENCHMARK(BM_GpuMemNetEnsembleOnly)->Unit(benchmark::kMicrosecond);

void BM_GpuMemNetLoadModelFile(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(GpuMemNetModel::load(kModels + "/cnn-8gib.json").members.size());
}
BENCHMARK(BM_GpuMemNetLoadModelFile)->Unit(benchmark::kMillisecond);

}  // namespace
