#pragma once
// Synthesises the GPU allocation sequence of PyTorch training iterations for a model graph: the
// parameters (model.to("cuda")), per iteration the input batch, forward activations (kept while a
// backward consumer needs them, freed as soon as nothing does), the loss, the backward pass
// (gradient of each layer's input, parameter gradients, freeing saved tensors), the optimizer step
// (lazy state on the first step, foreach temporaries) and zero_grad(set_to_none=True).
#include <cstdint>
#include <vector>

#include "estimate/graph/model_graph.h"
#include "estimate/optimizer.h"

namespace colo::estimate {

struct AllocEvent {
  enum class Op : std::uint8_t { Malloc, Free };
  Op op;
  std::uint32_t id;     // tensor id, unique over the trace; a Free names an earlier Malloc
  std::uint64_t bytes;  // Malloc only
};

struct TraceOptions {
  std::int64_t batch = 1;
  Optimizer optimizer = Optimizer::Adam;
  int iterations = 3;                    // steady state is reached from the second iteration on
  std::uint64_t cublas_workspace = 0;    // bytes, allocated at the first matmul and kept
  std::uint64_t conv_workspace = 0;      // bytes, transient around each conv forward/backward
  double conv_workspace_ratio = 0;       // + this multiple of the conv's larger activation tensor
  double strided_conv_workspace_ratio = 0;  // the multiple for strided convs (Layer::strided)
};

std::vector<AllocEvent> synthesize_training_trace(const ModelGraph& g, const TraceOptions& opt);

}  // namespace colo::estimate
