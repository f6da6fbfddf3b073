#include "estimate/trace/carma_probe.h"
#include "common/resource_path.h"

#include <array>
#include <cstdlib>
#include <filesystem>
#include <utility>

namespace colo::estimate {

namespace {

constexpr std::array<const char*, 8> kTorchvision = {"resnet18", "resnet34", "resnet50", "vgg16", "mobilenet_v2",
                                                     "mobilenet_v3_small", "efficientnet_b0", "inception_v3"};

// The carma transformer workloads as plain-PyTorch model files (models/pytorch/, after the Hugging
// Face configurations CARMA's workloads/*.py trained). Source, per script:
//  - BERT / GPT-2: a hand-written loop with transformers.AdamW, which updates one parameter at a
//    time (no foreach temporaries);
//  - XLNet: transformers.Trainer (torch AdamW, foreach on CUDA); its batch size is per device, so
//    the 2-GPU rows train a global batch of batch x GPUs through DataParallel.
struct ModelFile {
  const char* carma;
  const char* spec;
  const char* foreach;
  bool batch_per_device;
};
constexpr std::array<ModelFile, 6> kModelFiles = {{
    {"BERT_base", "bert.py:bert_base", "off", false},
    {"BERT_large", "bert.py:bert_large", "off", false},
    {"gpt2_large", "gpt2.py:gpt2_large", "off", false},
    {"gpt2_xl", "gpt2.py:gpt2_xl", "off", false},
    {"xlnet_base", "xlnet.py:xlnet_base_cased", "auto", true},
    {"xlnet_large", "xlnet.py:xlnet_large_cased", "auto", true},
}};

}  // namespace

std::string probe_models_dir() {
  if (const char* p = std::getenv("COLO_PROBE_MODELS"); p && *p) return p;
  return resource_path(nullptr, "models/pytorch", "");
}

std::optional<ProbeRequest> carma_probe_request(const DatasetRow& row, std::string& why) {
  ProbeRequest p;
  p.default_alloc_conf = true;  // the measured runs used PyTorch's default allocator settings
  p.batch = row.batch;  // the whole batch; DataParallel splits it (data_parallel = the row's GPUs)
  p.data_parallel = row.gpus;
  p.optimizer = row.optimizer ? std::string(to_string(*row.optimizer)) : "adam";
  for (const ModelFile& f : kModelFiles) {
    if (row.model != f.carma) continue;
    p.model = probe_models_dir() + "/" + f.spec;
    p.input = std::to_string(row.seq_len > 0 ? row.seq_len : 512);  // tokens per sample
    p.foreach = f.foreach;
    if (f.batch_per_device) p.batch = row.batch * row.gpus;
    return p;
  }
  bool known = false;
  for (const char* m : kTorchvision) known = known || row.model == m;
  if (!known) {
    why = "no probe model for '" + row.model + "'";
    return std::nullopt;
  }
  p.model = "torchvision:" + row.model;
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
