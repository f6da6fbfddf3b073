#include "estimate/trace/carma_probe.h"

#include <array>

namespace colo::estimate {

namespace {
constexpr std::array<const char*, 8> kTorchvision = {"resnet18", "resnet34", "resnet50", "vgg16", "mobilenet_v2",
                                                     "mobilenet_v3_small", "efficientnet_b0", "inception_v3"};
}

std::optional<ProbeRequest> carma_probe_request(const DatasetRow& row, std::string& why) {
  if (row.gpus != 1) {
    why = "multi-GPU (DataParallel) rows are not probed yet";
    return std::nullopt;
  }
  bool known = false;
  for (const char* m : kTorchvision) known = known || row.model == m;
  if (!known) {
    why = "no probe model for '" + row.model + "'";
    return std::nullopt;
  }
  ProbeRequest p;
  p.model = "torchvision:" + row.model;
  p.batch = row.batch;
  p.optimizer = row.optimizer ? std::string(to_string(*row.optimizer)) : "adam";
  if (row.data == "imagenet") {
    p.input = row.model == "inception_v3" ? "3x299x299" : "3x224x224";
  } else if (row.data == "cifar100" || row.data == "cifar10") {
    p.input = "3x32x32";
    p.num_classes = row.data == "cifar100" ? 100 : 10;
  } else {
    why = "unknown data set '" + row.data + "'";
    return std::nullopt;
  }
  return p;
}

}  // namespace colo::estimate
