// SM-activity model files (models/smact/*.json, $COLO_SMACT_MODEL; src/estimate/utilisation/
// smact_model.cpp), which colod and `colo estimate smact` read: any bytes must end in a UserError
// or models that predict for a CNN and an MLP job without a crash.
#include "estimate/utilisation/smact_model.h"
#include "fuzz_common.h"

namespace {

void parse_activity_model(const std::uint8_t* data, std::size_t size) {
  using namespace colo::estimate;
  const ActivityModels m = load_activity_models(colo::fuzz::scratch_file(colo::fuzz::as_text(data, size), "smact.json"));
  GpuMemNetInputs in;
  in.linear = 3;
  in.depth = 3;
  in.batch = 128;
  in.params = 2'000'000;
  in.activations = 4096;
  in.activation = "gelu";
  (void)m.for_inputs(in).predict(in);
  in.conv = 20;
  in.batchnorm = 20;
  in.depth = 23;
  in.activation = "relu";
  (void)m.for_inputs(in).predict(in);
}

}  // namespace

COLO_FUZZ_TARGET(activity_model) {
  COLO_FUZZ_EXPECT_USER_ERROR("activity_model", parse_activity_model(data, size));
  return 0;
}
