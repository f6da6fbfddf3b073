#pragma once
// Fits a calibration profile's constants on a training split: for every candidate cuDNN
// workspace size, allocsim's peak reserved memory is computed for each row (without context);
// the context overhead is then the constant that minimises the median absolute relative error
// while keeping under-estimates at or below `max_under_rate`. The best workspace wins.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "estimate/calibration_profile.h"
#include "estimate/dataset.h"

namespace colo::estimate {

struct FitOptions {
  std::vector<double> conv_workspace_mib = {0, 16, 32, 64, 128};
  double max_under_rate = 0.05;
  Optimizer default_optimizer = Optimizer::Adam;
};

struct FitResult {
  CalibrationProfile profile;
  nlohmann::ordered_json report;  // chosen constants, metrics on the fit rows, every candidate
  std::string inputs_csv;         // id,measured_mib,reserved_peak_mib (chosen workspace)
};

FitResult fit_profile(const std::vector<DatasetRow>& train_rows, const CalibrationProfile& base,
                      const FitOptions& opt);

}  // namespace colo::estimate
