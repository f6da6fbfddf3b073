// The simulator's CSV imports (src/sim/workloads/csv_table.cpp, workload_catalog.cpp, trace.cpp): the input
// is read as a workload catalog, and as a submission trace against a small fixed catalog.
#include "fuzz_common.h"
#include "sim/workloads/trace.h"
#include "sim/workloads/workload_catalog.h"

namespace {

const colo::sim::WorkloadCatalog& fixed_catalog() {
  static const colo::sim::WorkloadCatalog c = colo::sim::WorkloadCatalog::parse(
      "workload,model,dataset,batch_size,gpus,epochs,epoch_minutes,measured_mib,horus_mib,faketensor_mib,"
      "gpumemnet_mib,source\n"
      "resnet50_64,resnet50,imagenet,64,1,1,10,12000,11000,11500,12500,carma\n"
      "bert_base_32,bert_base,wiki,32,2,1,20,20000,,,,carma\n",
      "catalog.csv");
  return c;
}

}  // namespace

COLO_FUZZ_TARGET(sim_csv) {
  const std::string_view text = colo::fuzz::as_text(data, size);
  COLO_FUZZ_EXPECT_USER_ERROR("sim_csv", (void)colo::sim::WorkloadCatalog::parse(text, "fuzz.csv"));
  COLO_FUZZ_EXPECT_USER_ERROR("sim_csv", (void)colo::sim::parse_trace(text, "fuzz.csv", fixed_catalog()));
  return 0;
}
