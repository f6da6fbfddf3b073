// GPUMemNet classifier files (models/gpumemnet/*.json, `colo estimate --gpumemnet-model FILE`;
// src/estimate/gpumemnet/gpumemnet_model.cpp): any bytes must end in a UserError or a model, and a
// model that reads must predict for a job (finite features through every member) without a crash.
#include "estimate/gpumemnet/gpumemnet_model.h"
#include "fuzz_common.h"

namespace {

void parse_gpumemnet_model(const std::uint8_t* data, std::size_t size) {
  using namespace colo::estimate;
  const GpuMemNetModel m = GpuMemNetModel::load(colo::fuzz::scratch_file(colo::fuzz::as_text(data, size), "model.json"));
  GpuMemNetInputs in;
  in.conv = 12;
  in.batchnorm = 4;
  in.linear = 2;
  in.depth = 14;
  in.batch = 64;
  in.params = 11'000'000;
  in.activations = 3'000'000;
  in.activation = "relu";
  (void)m.buckets.upper_edge_mib(m.predict(in));
}

}  // namespace

COLO_FUZZ_TARGET(gpumemnet_model) {
  COLO_FUZZ_EXPECT_USER_ERROR("gpumemnet_model", parse_gpumemnet_model(data, size));
  return 0;
}
