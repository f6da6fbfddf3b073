#pragma once
// What GPUMemNet looks at in a model, and the fixed-length feature vector its classifiers read.
//
// The thesis' features: counts of linear, batch-norm, dropout and conv layers, depth, batch size,
// total parameters, total activations, activations × batch, and the activation function encoded
// as (cos θ, sin θ) of an angle per function (so no function is "larger" than another).
// "Activations" follow the GPUMemNet datasets' definition: per sample, summed over layers, and for
// layers with a C×H×W output only H×W (the CNN set does not count channels). Magnitudes (params,
// activations, activations × batch, batch) enter as log1p: memory grows multiplicatively with them
// and they span five orders of magnitude, which a standardised linear scale squeezes into a corner.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <Eigen/Dense>

#include "estimate/graph/model_graph.h"

namespace colo::estimate {

struct GpuMemNetInputs {
  std::int64_t linear = 0;
  std::int64_t conv = 0;
  std::int64_t batchnorm = 0;
  std::int64_t dropout = 0;
  std::int64_t depth = 0;        // layers with weights that compute (linear + conv)
  std::int64_t batch = 0;
  std::int64_t params = 0;
  std::int64_t activations = 0;  // per sample, GPUMemNet's definition (see above)
  std::string activation;        // canonical name, see canonical_activation()
};

// Canonical name of an activation function ("LeakyReLU", "leaky_relu" -> "leakyrelu",
// "swish" -> "silu", "None"/"" -> "identity", "geluactivation" -> "gelu", "relu6" -> "relu",
// "hardswish" -> "silu", "hardsigmoid" -> "sigmoid").
// Throws colo::UserError naming the function and the known ones when it is not one of them.
std::string canonical_activation(std::string_view name);
const std::vector<std::string>& known_activations();  // in angle order

// Angle θ = 2π·i/N of the i-th known function.
double activation_angle(std::string_view canonical);

// The most frequent activation layer's function (ReLU/Sigmoid/Tanh/Activation kinds, by
// canonical name; the first met wins a tie), "identity" when the graph has none.
std::string dominant_activation(const ModelGraph& graph);

// Reads the counts off a model graph. Per-layer activations are the source's own figure where
// the parser kept it (Layer::source_activations), else out_elems(), H×W for rank-3 outputs.
// The activation function is ModelGraph::activation when the parser set it, else
// dominant_activation(graph).
GpuMemNetInputs gpumemnet_inputs(const ModelGraph& graph, std::int64_t batch);

inline constexpr int kGpuMemNetFeatureCount = 11;
const std::array<std::string_view, kGpuMemNetFeatureCount>& gpumemnet_feature_names();
Eigen::VectorXd gpumemnet_features(const GpuMemNetInputs& in);

// Per-feature standardisation fitted on the training part only (constant features get scale 1).
struct Standardizer {
  Eigen::VectorXd mean;
  Eigen::VectorXd scale;
  static Standardizer fit(const Eigen::MatrixXd& x);  // x: features × samples
  Eigen::MatrixXd apply(const Eigen::MatrixXd& x) const;
};

}  // namespace colo::estimate
