#pragma once
// The GPUMemNet datasets (data/gpumemnet/{mlp,cnn}.csv) as labelled feature rows.
// Features come from the dataset's own columns, as the thesis trained on them: the layer list
// (`Activations-Params`: (type, per-sample activations, params) tuples) gives the layer counts,
// `Total Parameters`/`Total Activations`/`Batch Size`/`Activation Function` the rest.
//
// The train/test split is the estimator's (estimate/dataset.h in_train_split: a hash of the row's
// Filename, 80/20), so it never depends on row order and `colo estimate eval --split test` scores
// GPUMemNet on exactly the rows it never saw.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "estimate/gpumemnet/gpumemnet_features.h"

namespace colo::estimate {

enum class GpuMemNetFamily { MLP, CNN };
// "gpumemnet-mlp" / "gpumemnet-cnn"; anything else -> colo::UserError.
GpuMemNetFamily parse_gpumemnet_family(std::string_view format);
std::string_view to_string(GpuMemNetFamily f);  // "mlp" / "cnn"

struct GpuMemNetRow {
  std::string filename;
  int line = 0;               // 1-based line in the CSV file
  GpuMemNetInputs inputs;
  double measured_mib = 0;    // "Max GPU Memory (MiB)"
  bool oom = false;           // Status OOM_CRASH: did not fit in the 40 GB A100
  // The run's measured GPU activity ("Avg SMACT", "Avg SMOCC": DCGM's SM activity and occupancy,
  // 0..1, averaged over the run); none where the column is absent or the sampler recorded -1.
  std::optional<double> smact, smocc;
};

struct GpuMemNetDataset {
  std::vector<GpuMemNetRow> rows;  // usable rows
  // Rows with Status SUCCESSFUL but a measured peak of 0 MiB: the sampler saw nothing (runs of a
  // few milliseconds), so they carry no label. Kept out of training and scoring, counted here.
  int unmeasured = 0;
  // Rows whose layer list is empty ("[]", depth 0, activation "None"): the generator recorded no
  // architecture, so there is nothing to compute features from. Skipped, counted here.
  int no_layers = 0;
};

// Reads the whole file; a malformed row -> colo::UserError "file:line: ...".
GpuMemNetDataset load_gpumemnet_dataset(const std::string& path, GpuMemNetFamily family);

bool in_test_split(std::string_view filename);  // !in_train_split(filename)

}  // namespace colo::estimate
