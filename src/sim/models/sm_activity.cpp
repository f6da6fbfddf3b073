#include "sim/models/sm_activity.h"

#include <algorithm>
#include <cmath>

namespace colo::sim {

const SmActivityTable& default_sm_activity_table() {
  // Small models on 32×32 or 28×28 images launch many tiny kernels that leave most SMs idle and
  // wait on the data loader; ImageNet CNNs fill the GPU more as the batch grows; transformer
  // training at sequence length 512 is dominated by large GEMMs. See docs/SIMULATOR.md.
  static const SmActivityTable table = {{"mnist_cnn", {0.10, 0.03}},
                                        {"cifar_cnn", {0.22, 0.05}},
                                        {"imagenet_cnn", {0.55, 0.15}},
                                        {"transformer", {0.90, 0.02}}};
  return table;
}

std::optional<SmActivity> assumed_sm_activity(std::string_view /*model*/, std::string_view dataset, int batch_size,
                                              const SmActivityTable& table) {
  std::string_view cls;
  if (dataset == "mnist") cls = "mnist_cnn";
  else if (dataset == "cifar10" || dataset == "cifar100") cls = "cifar_cnn";
  else if (dataset == "imagenet") cls = "imagenet_cnn";
  else if (dataset == "wiki") cls = "transformer";
  const auto row = table.find(cls);
  if (cls.empty() || row == table.end()) return std::nullopt;
  const double doublings = std::log2(std::max(batch_size, 1) / 32.0);
  const double v = std::clamp(row->second.at_batch_32 + row->second.per_doubling * doublings, 0.05, 1.0);
  return SmActivity{v, std::string(cls)};
}

}  // namespace colo::sim
