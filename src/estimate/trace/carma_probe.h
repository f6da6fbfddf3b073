#pragma once
// Which carma workloads (data/carma/workloads.csv) the probe can rebuild, and how: the
// torchvision networks by name, with the input and class count of the data set they trained on.
// The measured scripts are CARMA's workloads/*.py (torchvision models, CrossEntropyLoss, the
// optimizer the row states; the transformers as model files in models/pytorch/, DataParallel over
// the row's GPUs). Xception and the MNIST CNN have no probe model yet.
#include <optional>
#include <string>

#include "estimate/evaluation/dataset.h"
#include "estimate/trace/probe_runner.h"

namespace colo::estimate {

// The probe request for a carma row, or nullopt (with `why`) when the probe cannot rebuild it.
std::optional<ProbeRequest> carma_probe_request(const DatasetRow& row, std::string& why);

// Where the transformer model files are: $COLO_PROBE_MODELS, <source>/models/pytorch, or
// /usr/share/colo/models/pytorch.
std::string probe_models_dir();

}  // namespace colo::estimate
