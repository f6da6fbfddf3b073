#pragma once
// One interface for every memory estimator. The question is always the same: peak GPU memory per
// GPU, in MiB, as nvidia-smi would show it for the training process (CUDA context included), for
// one job (model graph, batch size, optimizer) on one GPU type (a calibration profile name).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/units.h"
#include "estimate/allocator/allocator_settings.h"
#include "estimate/graph/model_graph.h"
#include "estimate/optimizer.h"

namespace colo::estimate {

struct ProbeTrace;

struct EstimateRequest {
  std::string gpu = "a100-40gb";          // calibration profile name (calibration/<gpu>*.json)
  std::int64_t batch = 0;                 // per-GPU batch size (samples per iteration)
  Optimizer optimizer = Optimizer::Adam;
  const ModelGraph* graph = nullptr;      // may be null for estimators that need none (oracle)
  std::optional<MiB> stated_mib;          // a figure the user or a trace stated (oracle reads it)
  const ProbeTrace* trace = nullptr;      // the probe's record of two iterations (trace, faketensor)
  // The job's allocator settings (PYTORCH_ALLOC_CONF) for a summary: allocsim replays with them, the
  // other summary estimators say they do not model them. A trace carries its own (its header).
  const AllocatorSettings* allocator = nullptr;
};

struct Estimate {
  MiB mib = 0;                            // peak per GPU, nvidia-smi view
  std::string estimator;                  // the estimator that produced it ("auto" names the one it used)
  std::string explanation;                // one short line: what went into the number
  double peak_mib = 0;                    // trace/faketensor: the replayed peak before context/margin (0 = n/a)
};

class Estimator {
 public:
  virtual ~Estimator() = default;
  virtual std::string name() const = 0;
  // Throws colo::UserError when the request lacks what this estimator needs (no graph, batch <= 0,
  // no stated figure for oracle, unknown GPU profile, ...).
  virtual Estimate estimate(const EstimateRequest& req) const = 0;
};

// "oracle", "horus", "allocsim", "gpumemnet", "trace", "faketensor", "auto". Throws colo::UserError for any other name.
// The gpumemnet entry calls `std::unique_ptr<Estimator> make_gpumemnet_estimator();` declared in
// estimate/gpumemnet.h (owned by the GPUMemNet work).
std::unique_ptr<Estimator> make_estimator(const std::string& name);
std::vector<std::string> estimator_names();

// Convenience for the daemon and the simulator: load a model summary (torchsummary table, module
// repr with parameter counts, or Keras model.summary() text; format detected), then estimate.
// seq_len applies to transformer summaries (0 = the parser's default, 512). Throws colo::UserError
// on a missing/malformed file, a bad optimizer or estimator name, or batch <= 0.
Estimate estimate_from_summary(const std::string& summary_path, std::int64_t batch,
                               const std::string& optimizer, const std::string& estimator,
                               std::int64_t seq_len = 0, const std::string& gpu = "a100-40gb",
                               const AllocatorSettings* allocator = nullptr);

}  // namespace colo::estimate
