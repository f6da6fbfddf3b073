#pragma once
// Constants that depend on the GPU and the software stack rather than on the model: what the CUDA
// context and libraries take outside PyTorch's allocator, library workspaces, the GPU's capacity.
// One JSON file per profile in calibration/ (e.g. calibration/a100-40gb.json, profile name
// "a100-40gb-pytorch2"), written by `colo estimate calibrate` together with its fit inputs/results.
#include <cstdint>
#include <string>

#include "core/units.h"

namespace colo::estimate {

struct CalibrationProfile {
  std::string gpu = "a100-40gb";            // the name requests use
  std::string name = "a100-40gb-pytorch2";  // GPU + framework
  MiB gpu_total_mib = 40960;                // what nvidia-smi reports as total
  double context_mib = 0;                   // CUDA context + cuBLAS kernels: outside the allocator
  double cudnn_context_mib = 0;             // + cuDNN's kernels/handle, loaded at the first conv/batch norm
  double safety_margin = 0;                 // estimate = reserved * (1 + margin) + context
  double cudnn_safety_margin = 0;           // the margin for models that use cuDNN (fitted on CNN rows)
  double cublas_workspace_mib = 8.125;      // cuBLAS workspace (via the caching allocator, kept)
  double conv_workspace_mib = 0;            // transient cuDNN workspace around each conv call
  // ... plus this multiple of the conv's larger activation tensor (input or output, whole batch):
  // cuDNN's algorithms size their workspace with the problem.
  double conv_workspace_ratio = 0;
  // The multiple for strided convs (stride > 1: no FFT/Winograd algorithm, larger workspaces);
  // a profile without it uses conv_workspace_ratio.
  double strided_conv_workspace_ratio = 0;
  // The trace estimator's own constants (it sees real tensors, not a synthesised sequence, so it
  // needs less margin); fitted by `colo estimate calibrate --estimator trace`.
  double trace_conv_workspace_mib = 0;
  double trace_conv_workspace_ratio = 0;
  double trace_strided_conv_workspace_ratio = 0;
  double trace_safety_margin = 0;          // models without cuDNN (fitted on MLP rows)
  double trace_cudnn_safety_margin = 0;    // models with convolutions or batch norm (CNN rows)
  // Added to the context above for the trace estimator (may be negative): the replay sees what
  // the allocator holds exactly, so the context it needs differs from allocsim's fit.
  double trace_context_offset_mib = 0;
  double trace_cudnn_context_offset_mib = 0;
  std::string trace_fitted_on;
  // The GPU's measured convolution workspaces (trace/conv/conv_workspace_table.h): a file name beside
  // the profile; "" = none (the trace replay then uses the trace_*conv_workspace* constants).
  std::string conv_workspace_table;
  // A convolution shape the table lacks: replay its k nearest measured shapes' workspaces, keep the
  // largest peak (trace/conv/conv_workspace_neighbours.h); 0 = the trace_*conv_workspace* ratios.
  int trace_conv_workspace_neighbours = 0;
  std::string source;                       // where the profile was read from (resolves the table)
  std::string fitted_on;                    // provenance: data set, split and command
  std::string fit_command;

  std::string to_json() const;
  static CalibrationProfile from_json(const std::string& text, const std::string& source);
};

// Finds the profile for `gpu` ("a100-40gb"): $COLO_CALIBRATION_DIR, ./calibration, then the
// source tree's calibration/ directory; file <gpu>.json. Throws colo::UserError if none.
// A profile name is a file name in a calibration directory: [A-Za-z0-9._-]+, not starting with
// '.', at most 100 bytes. Throws UserError otherwise.
void check_profile_name(const std::string& gpu);
CalibrationProfile load_profile(const std::string& gpu);
std::string profile_path(const std::string& gpu);  // where load_profile found it ("" if nowhere)

}  // namespace colo::estimate
