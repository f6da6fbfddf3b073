#pragma once
// Fits a calibration profile's constants on a training split (never on the held-out rows):
//  - for every candidate cuDNN-workspace ratio, allocsim's peak reserved memory is computed per row;
//  - the context overhead is the constant that minimises the median absolute relative error
//    (an unbiased fit: about half the rows end under, half over);
//  - the safety margin is the smallest relative uplift that leaves at most `max_under_rate` of the
//    rows under-estimated;
//  - of the (ratio, strided-conv ratio) pairs, the one with the lowest median error after its
//    margin wins;
//  - that selection favours candidates whose margin came out low by chance, so the whole fit is
//    cross-validated (k folds of the fit rows): the fit's own under-estimate target is lowered
//    until the held-out folds see at most `max_under_rate` under-estimates.
// MLP rows never load cuDNN: they fit `context_mib` and `safety_margin`. CNN rows fit
// `cudnn_context_mib`, `conv_workspace_ratio` and `cudnn_safety_margin` on top of the profile's
// `context_mib` (so calibrate the MLP set first, then the CNN set).
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "estimate/calibration/calibration_profile.h"
#include "estimate/evaluation/dataset.h"

namespace colo::estimate {

struct FitOptions {
  std::vector<double> conv_workspace_ratio = {0, 0.5, 1, 1.5, 2, 2.5, 3, 4};
  std::vector<double> strided_conv_workspace_ratio = {0, 1, 2, 3, 4, 6, 8, 10, 12, 16};
  double max_under_rate = 0.05;
  std::size_t cv_folds = 5;  // nested cross-validation of the under-estimate rate (0: none)
  bool cnn = true;  // fit cudnn_context_mib (CNN rows) rather than context_mib (MLP rows)
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
