#include "sim/workloads/workload_assumptions.h"

namespace colo::sim {

std::optional<AssumedValues> assumed_values(std::string_view name) {
  // mnist_train is PyTorch's examples/mnist (14 epochs, Adadelta, as the catalog says) at batch
  // 32: 1 875 steps of a 1.2 M-parameter CNN per epoch plus a test pass, which on an A100 is
  // bound by the single-process data loader at roughly 18 s per epoch. Memory is published.
  if (name == "mnist_train") return AssumedValues{0.3, std::nullopt, "mnist epoch ≈ 18 s (data-loader bound)"};
  // gpt2_xl (1.56 B parameters, AdamW, fp32, batch 2, seq 512) on one GPU: weights+grads+2 Adam
  // moments = 16 B/param ≈ 23.3 GiB, activations ≈ 48 layers × ~240 MiB ≈ 11.3 GiB, logits and
  // workspaces ≈ 1 GiB, CUDA context ≈ 0.5 GiB → ≈ 37 100 MiB: it just fits a 40 GB A100 alone.
  // Epoch time: twice gpt2_large's FLOPs per token, on one GPU instead of two, over the same
  // corpus → ≈ 4 × 65 min.
  if (name == "gpt2_xl") return AssumedValues{260.0, 37100, "gpt2_xl ≈ 37 100 MiB, 4 × gpt2_large's epoch"};
  return std::nullopt;
}

}  // namespace colo::sim
