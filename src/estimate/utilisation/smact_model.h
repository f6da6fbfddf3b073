#pragma once
// Utilisation estimation (thesis §7.1): a job's solo SM activity (DCGM SMACT) and SM occupancy
// (SMOCC) on the GPU, predicted before it runs from what GPUMemNet reads off the model (layer
// counts, depth, batch, parameters, activations, activation function: gpumemnet_features).
//
// Model: ridge regression on the quadratic expansion of the standardised features (1 + 11 + 66
// columns), one per GPUMemNet family (MLP, CNN), fitted on the measured rows of the train split
// (`Avg SMACT`, `Avg SMOCC` of successful runs on an A100 40 GB; estimate/evaluation/dataset.h
// in_train_split) with the ridge strength chosen by 5-fold cross-validation on those rows only.
// Predictions are clamped to [0, 1]. A graph with conv layers takes the CNN model, others the MLP
// model. Source of every weight: the model file's `source` and `fitted_on` fields.
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "estimate/gpumemnet/gpumemnet_dataset.h"
#include "estimate/gpumemnet/gpumemnet_features.h"

namespace colo::estimate {

struct ActivityPrediction {
  double smact = 0;
  double smocc = 0;
  // False when a feature lies more than kActivityDomainSigma standard deviations from the
  // training rows' mean, or differs from a value every training row shared (a network unlike any
  // GPUMemNet generated: a transformer with 10^8 parameters, a CNN with 3 linear layers where all
  // had 1): the model would extrapolate, so callers must treat it as unknown.
  bool in_domain = true;
  std::string outside;  // "log1p_params at 7.3 σ …" or "linear = 3, every … row had 1" when not in_domain
};
inline constexpr double kActivityDomainSigma = 4.0;

class ActivityModel {
 public:
  // Fits on the rows with a measured SMACT and SMOCC that did not crash; throws colo::UserError
  // when fewer than 20 such rows are given.
  static ActivityModel fit(const std::vector<GpuMemNetRow>& rows, GpuMemNetFamily family);
  ActivityPrediction predict(const GpuMemNetInputs& in) const;

  GpuMemNetFamily family() const { return family_; }
  double lambda() const { return lambda_; }
  int fitted_rows() const { return rows_; }
  nlohmann::json to_json() const;
  static ActivityModel from_json(const nlohmann::json& j, const std::string& where);

 private:
  GpuMemNetFamily family_ = GpuMemNetFamily::MLP;
  double lambda_ = 1;
  int rows_ = 0;
  Standardizer standardizer_;
  // Features with one value in every fitted row (the standardiser sets their scale to 1, so σ
  // says nothing there): any other value is outside the domain. All false in older model files.
  std::vector<bool> constant_;
  Eigen::VectorXd w_smact_, w_smocc_;
};

// The pair the CLI, the simulator and colod use; a file holds both (models/smact/*.json).
struct ActivityModels {
  ActivityModel mlp, cnn;
  std::string source;  // what they were fitted on (data, split, command)
  const ActivityModel& for_inputs(const GpuMemNetInputs& in) const { return in.conv > 0 ? cnn : mlp; }
  nlohmann::json to_json() const;
  static ActivityModels from_json(const nlohmann::json& j, const std::string& where);
};

// Reads a model file; throws colo::UserError "FILE: why".
ActivityModels load_activity_models(const std::string& path);
// The shipped model: $COLO_SMACT_MODEL, else models/smact/a100-gpumemnet.json beside the binary's
// data (source tree or /usr/share/colo).
std::string default_activity_model_path();

// Held-out accuracy of a model on rows (the measured, non-crashed ones).
struct ActivityScore {
  int rows = 0;
  double smact_median_abs_err = 0, smact_p90_abs_err = 0;
  double smocc_median_abs_err = 0;
  int outside_domain = 0;  // rows scored although outside the training domain (counted, not dropped)
};
ActivityScore score_activity(const ActivityModel& m, const std::vector<GpuMemNetRow>& rows);

// The rows a model is fitted on and scored on: measured SMACT and SMOCC, not an OOM crash.
bool has_activity_label(const GpuMemNetRow& r);

}  // namespace colo::estimate
