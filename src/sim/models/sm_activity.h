#pragma once
// Solo SM activity (DCGM SMACT, 0..1) of a training job, by workload class. The catalog does not
// publish it, so this is an assumption, documented with its reasons in docs/SIMULATOR.md:
//
// | class         | recognised by             | SMACT at batch 32 | + per batch doubling |
// |---------------|---------------------------|-------------------|----------------------|
// | mnist_cnn     | dataset mnist             | 0.10              | +0.03                |
// | cifar_cnn     | dataset cifar10/cifar100  | 0.22              | +0.05                |
// | imagenet_cnn  | dataset imagenet          | 0.55              | +0.15                |
// | transformer   | dataset wiki (BERT/GPT/XLNet) | 0.90          | +0.02                |
//
// Clamped to [0.05, 1]. A catalog with an `smact` column overrides the table row by row.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace colo::sim {

struct SmActivity {
  double value = 0;
  std::string workload_class;
};

// One class's row (the model file's [smact.CLASS]).
struct SmActivityClass {
  double at_batch_32 = 0;
  double per_doubling = 0;
};
// Rows by class name: mnist_cnn, cifar_cnn, imagenet_cnn, transformer.
using SmActivityTable = std::map<std::string, SmActivityClass, std::less<>>;
// The built-in rows (models/sim/a100-thesis.toml states their sources).
const SmActivityTable& default_sm_activity_table();

// nullopt when the dataset names no known class (or the table lacks the class).
std::optional<SmActivity> assumed_sm_activity(std::string_view model, std::string_view dataset, int batch_size,
                                              const SmActivityTable& table = default_sm_activity_table());

}  // namespace colo::sim
