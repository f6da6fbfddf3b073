#pragma once
// Fits the trace estimator's constants on a training split of pre-recorded probe traces (never on
// held-out rows): for every (conv workspace ratio, strided ratio) candidate each row's trace is
// replayed; for each safety margin on a grid (0 .. 1) the context offset is the smallest that leaves
// at most `max_under_rate` of the rows under-estimated; the (ratios, margin, offset) with the
// lowest median |error| wins.
// MLP rows (no cuDNN) fit trace_context_offset_mib and trace_safety_margin; CNN rows fit the
// workspace ratios, trace_cudnn_context_offset_mib and trace_cudnn_safety_margin.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "estimate/calibration/calibration_profile.h"
#include "estimate/evaluation/dataset.h"
#include "estimate/trace/trace_library.h"

namespace colo::estimate {

struct TraceFitOptions {
  std::vector<double> conv_workspace_ratio = {0, 0.5, 1, 1.5, 2, 3, 4, 5, 6, 8};
  std::vector<double> strided_conv_workspace_ratio = {0, 1, 2, 4, 8, 12, 16};
  double max_under_rate = 0.05;
  bool cnn = true;
};

struct TraceFitResult {
  CalibrationProfile profile;
  nlohmann::ordered_json report;  // chosen constants, fit-row metrics, every candidate
};

// Throws colo::UserError when no row has both a trace and a measurement.
TraceFitResult fit_trace_profile(const std::vector<DatasetRow>& train_rows, const TraceLibrary& traces,
                                 const CalibrationProfile& base, const TraceFitOptions& opt);

}  // namespace colo::estimate
