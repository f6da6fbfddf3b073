// Evaluation data sets (src/estimate/dataset.cpp): the RFC 4180 reader and the GPUMemNet MLP/CNN
// and carma-workloads formats over a whole CSV file. The carma format looks for summaries/ next to
// the file; the scratch directory has none, so it exercises the row checks and the lookup.
#include "estimate/evaluation/dataset.h"
#include "fuzz_common.h"

COLO_FUZZ_TARGET(dataset) {
  using colo::estimate::DatasetFormat;
  using colo::estimate::Split;
  const std::string path = colo::fuzz::scratch_file(colo::fuzz::as_text(data, size), "fuzz.csv");
  COLO_FUZZ_EXPECT_USER_ERROR("dataset", (void)colo::estimate::load_dataset(path, DatasetFormat::GpuMemNetMLP, Split::All));
  COLO_FUZZ_EXPECT_USER_ERROR("dataset", (void)colo::estimate::load_dataset(path, DatasetFormat::GpuMemNetCNN, Split::Train));
  COLO_FUZZ_EXPECT_USER_ERROR("dataset", (void)colo::estimate::load_dataset(path, DatasetFormat::CarmaWorkloads, Split::Test));
  return 0;
}
