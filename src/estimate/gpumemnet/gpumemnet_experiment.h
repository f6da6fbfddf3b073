#pragma once
// One GPUMemNet experiment on a dataset: split by filename hash, k-fold cross-validation on the
// training part, a final ensemble trained on the whole training part and scored on the held-out
// test part. `colo gpumemnet train|cv` is a thin shell around it; the committed model files under
// models/gpumemnet/ are its output, with the scores written into their provenance.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.h"
#include "estimate/gpumemnet/gpumemnet_dataset.h"
#include "estimate/gpumemnet/gpumemnet_metrics.h"
#include "estimate/gpumemnet/gpumemnet_model.h"
#include "estimate/gpumemnet/gpumemnet_training.h"

namespace colo::estimate {

struct GpuMemNetExperiment {
  std::string dataset;  // CSV path
  GpuMemNetFamily family = GpuMemNetFamily::CNN;
  MiB bucket_mib = 8 * kGiB;
  MiB capacity_mib = 40 * kGiB;
  int folds = 5;         // 0 or 1: skip cross-validation
  bool final_model = true;
  // OOM_CRASH rows form the "does not fit" bucket by default; drop_oom leaves them out instead
  // (for comparison with scores computed on runs that fitted only).
  bool drop_oom = false;
  EnsembleConfig config;
  std::string command;  // recorded in the model's provenance
};

// How the upper-edge estimate compares with the measured peak on held-out rows that ran.
struct EdgeErrors {
  int n = 0;
  double median_abs_rel_err = 0;
  double under_rate = 0;  // estimate below the measured peak
  int oom_rows = 0, oom_predicted = 0;
};

struct GpuMemNetExperimentResult {
  int train_rows = 0, test_rows = 0, unmeasured_rows = 0, no_layer_rows = 0;
  std::vector<ClassificationScores> folds;
  ScoreSummary cv;
  ClassificationScores test;
  EdgeErrors test_edges;
  GpuMemNetModel model;  // empty members when final_model is false
};

GpuMemNetExperimentResult run_gpumemnet_experiment(const GpuMemNetExperiment& e);

nlohmann::json to_json(const ClassificationScores& s);
nlohmann::json to_json(const GpuMemNetExperimentResult& r);  // the scores, not the model

}  // namespace colo::estimate
