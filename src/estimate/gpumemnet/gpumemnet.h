#pragma once
// The gpumemnet estimator (the thesis' GPUMemNet): features from the model graph, an MLP-ensemble
// classifier into N-GiB buckets, and the predicted bucket's upper edge as the estimate.
//
// Model files are models/gpumemnet/<family>-<N>gib.json, produced by `colo gpumemnet train`
// (docs/GPUMEMNET.md lists the commands). Pure MLPs (only linear layers, no conv/attention/
// embedding) use the MLP model, everything else the CNN model: there is no transformer dataset, so
// transformers are scored by the CNN model, outside what it was trained on. Default bucket widths
// are the thesis': 1 GiB for MLPs, 8 GiB for CNNs. The optimizer and GPU type are not features
// (the datasets are A100 40 GB runs); the explanation says so.
#include <memory>
#include <string>

#include "core/units.h"
#include "estimate/estimator.h"
#include "estimate/gpumemnet/gpumemnet_model.h"

namespace colo::estimate {

// $COLO_GPUMEMNET_MODELS when set, else <source dir>/models/gpumemnet.
std::string default_gpumemnet_model_dir();

// The model file the estimator reads for a family ("mlp"/"cnn") and bucket width.
std::string gpumemnet_model_path(const std::string& dir, const std::string& family, MiB bucket_mib);

// "mlp" or "cnn": which model a graph is scored by (see above).
std::string gpumemnet_family_for(const ModelGraph& graph);

// Models are loaded on first use; a missing or corrupt file -> colo::UserError naming it.
// bucket_mib 0 = the thesis' default per family.
std::unique_ptr<Estimator> make_gpumemnet_estimator();
std::unique_ptr<Estimator> make_gpumemnet_estimator(const std::string& model_dir, MiB bucket_mib);

}  // namespace colo::estimate
