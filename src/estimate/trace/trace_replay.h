#pragma once
// Replays a probe trace through the caching-allocator model, adding what the trace cannot show:
// the transient cuDNN workspace around each convolution and the cuBLAS workspace (taken at the
// first matmul and kept). Result: peak reserved (what nvidia-smi shows above the context) and
// which phase/operator set it; plus the peak of live tensor bytes (the FakeTensor view).
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "estimate/calibration/calibration_profile.h"
#include "estimate/trace/conv/conv_workspace_neighbours.h"
#include "estimate/trace/conv/conv_workspace_table.h"
#include "estimate/trace/probe_trace.h"

namespace colo::estimate {

struct TraceReplayOptions {
  std::uint64_t capacity = std::numeric_limits<std::uint64_t>::max();  // bytes the allocator may reserve
  // The GPU's whole memory, bytes: what a script's set_per_process_memory_fraction is a share of
  // (0: unknown, the fraction is then not applied).
  std::uint64_t device_total = 0;
  std::uint64_t cublas_workspace = 0;   // bytes
  std::uint64_t conv_workspace = 0;     // bytes, around every convolution
  double conv_workspace_ratio = 0;      // + this multiple of the conv's larger activation
  double strided_conv_workspace_ratio = 0;
  // The GPU's measured workspaces per convolution shape; a convolution whose key it lists replays
  // what was measured (outputs and transients in their order) instead of the ratios above.
  std::shared_ptr<const ConvWorkspaceTable> conv_table;
  // A keyed convolution the table lacks replays the steps of its nearest measured shapes instead of
  // the ratios: the replay runs once per neighbour (the i-th run takes each convolution's i-th
  // nearest) and reports the run with the largest peak. 0 neighbours, or no index: the ratios.
  std::shared_ptr<const ConvWorkspaceNeighbours> conv_neighbours;
  std::size_t conv_neighbour_count = 0;
  // Loads the profile's conv_workspace_table (beside the profile file) when it names one, and its
  // neighbour index when the profile asks for neighbours (trace_conv_workspace_neighbours).
  static TraceReplayOptions from_profile(const CalibrationProfile& p);
};

struct TraceReplay {
  std::uint64_t reserved_peak = 0;
  std::uint64_t allocated_peak = 0;
  std::uint64_t live_peak = 0;          // sum of live storage bytes, unrounded (FakeTensor's number)
  std::string reserved_peak_at;         // "phase op (step N)" of the request that set the reserved peak
  std::string live_peak_at;
  std::uint64_t events = 0;
  std::uint64_t convs = 0, matmuls = 0;
  std::uint64_t convs_measured = 0;     // convolutions replayed from the measured workspace table
  std::uint64_t convs_from_neighbours = 0;  // ... from the nearest measured shapes (in the reported run)
  std::size_t neighbour_runs = 1;       // replays run (one per neighbour rank)
  std::size_t worst_run = 0;            // the one reported: the largest peak (0: nearest neighbours)
  bool out_of_memory = false;
  std::string oom_at;                   // out of memory: "phase op (step N)" of the request that failed,
  std::uint64_t oom_request = 0;        // its bytes,
  std::uint64_t oom_reserved = 0;       // and what was reserved then
  // The script's set_per_process_memory_fraction limit in force (bytes; 0: none): an out of
  // memory under it is the script's own cap, not the GPU's.
  std::uint64_t fraction_limit = 0;
  std::uint64_t empty_caches = 0;       // torch.cuda.empty_cache() calls replayed
};

TraceReplay replay_probe_trace(const ProbeTrace& t, const TraceReplayOptions& o);

// Whether the job loads cuDNN (convolutions; batch norm on >= 3-D inputs, which the probe records
// as cudnn_batch_norm — 2-D batch norm runs PyTorch's own kernel): its context is larger.
bool trace_uses_cudnn(const ProbeTrace& t);

}  // namespace colo::estimate
