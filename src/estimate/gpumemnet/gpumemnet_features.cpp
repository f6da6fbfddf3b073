#include "estimate/gpumemnet/gpumemnet_features.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <numbers>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace colo::estimate {

const std::vector<std::string>& known_activations() {
  // The eleven functions of the GPUMemNet datasets plus sigmoid; order fixes the angles, so
  // appending is safe but reordering invalidates trained model files.
  static const std::vector<std::string> names = {"relu", "leakyrelu", "prelu",    "elu",  "selu",    "gelu",
                                                 "silu", "mish",      "softplus", "tanh", "identity", "sigmoid"};
  return names;
}

std::string canonical_activation(std::string_view name) {
  std::string t;
  for (char c : name) {
    if (c == '_' || c == '-' || c == ' ') continue;
    t.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  if (t.empty() || t == "none" || t == "linear") return "identity";
  if (t == "swish") return "silu";
  if (t == "relu6") return "relu";
  // Close relatives of a trained-on function (same shape of curve, same saved tensors).
  if (t == "hardswish") return "silu";
  if (t == "hardsigmoid") return "sigmoid";
  if (t == "geluactivation" || t == "newgeluactivation" || t == "fastgeluactivation" || t == "gelunew" ||
      t == "quickgeluactivation")
    return "gelu";
  const auto& known = known_activations();
  if (std::find(known.begin(), known.end(), t) == known.end()) {
    throw UserError(fmt::format("gpumemnet: activation function '{}' is none of those it was trained on ({})",
                                name, fmt::join(known, ", ")));
  }
  return t;
}

double activation_angle(std::string_view canonical) {
  const auto& known = known_activations();
  const auto it = std::find(known.begin(), known.end(), canonical);
  if (it == known.end()) throw UserError(fmt::format("gpumemnet: no angle for activation '{}'", canonical));
  return 2.0 * std::numbers::pi * static_cast<double>(it - known.begin()) / static_cast<double>(known.size());
}

std::string dominant_activation(const ModelGraph& graph) {
  std::map<std::string, int> count;
  std::string best = "identity";
  int most = 0;
  for (const auto& l : graph.layers) {
    if (l.kind != LayerKind::ReLU && l.kind != LayerKind::Sigmoid && l.kind != LayerKind::Tanh &&
        l.kind != LayerKind::Activation)
      continue;
    const std::string name = canonical_activation(l.type_name.empty() ? std::string(to_string(l.kind)) : l.type_name);
    // Strictly more wins, so among equals the one met first in forward order stays.
    if (++count[name] > most) {
      most = count[name];
      best = name;
    }
  }
  return best;
}

GpuMemNetInputs gpumemnet_inputs(const ModelGraph& graph, std::int64_t batch) {
  if (batch <= 0) throw UserError(fmt::format("gpumemnet: batch size must be positive, got {}", batch));
  GpuMemNetInputs in;
  in.batch = batch;
  for (const auto& l : graph.layers) {
    if (l.kind == LayerKind::Container) continue;  // its children are counted already
    switch (l.kind) {
      case LayerKind::Linear: ++in.linear; break;
      case LayerKind::Conv:
      case LayerKind::ConvTranspose: ++in.conv; break;
      case LayerKind::BatchNorm: ++in.batchnorm; break;
      case LayerKind::Dropout: ++in.dropout; break;
      default: break;
    }
    in.params += l.params;
    if (l.source_activations >= 0) {
      in.activations += l.source_activations;
    } else if (l.out_shape.size() == 3) {
      in.activations += l.out_shape[1] * l.out_shape[2];  // H×W, as the CNN dataset counts
    } else {
      in.activations += l.out_elems();
    }
  }
  in.depth = in.linear + in.conv;
  in.activation = canonical_activation(graph.activation.empty() ? dominant_activation(graph) : graph.activation);
  return in;
}

const std::array<std::string_view, kGpuMemNetFeatureCount>& gpumemnet_feature_names() {
  static const std::array<std::string_view, kGpuMemNetFeatureCount> names = {
      "linear",      "conv",       "batchnorm",       "dropout",      "depth",  "log1p_batch",
      "log1p_params", "log1p_activations", "log1p_activations_x_batch", "act_cos", "act_sin"};
  return names;
}

Eigen::VectorXd gpumemnet_features(const GpuMemNetInputs& in) {
  const double theta = activation_angle(in.activation);
  Eigen::VectorXd f(kGpuMemNetFeatureCount);
  f << static_cast<double>(in.linear), static_cast<double>(in.conv), static_cast<double>(in.batchnorm),
      static_cast<double>(in.dropout), static_cast<double>(in.depth), std::log1p(static_cast<double>(in.batch)),
      std::log1p(static_cast<double>(in.params)), std::log1p(static_cast<double>(in.activations)),
      std::log1p(static_cast<double>(in.activations) * static_cast<double>(in.batch)), std::cos(theta),
      std::sin(theta);
  return f;
}

Standardizer Standardizer::fit(const Eigen::MatrixXd& x) {
  if (x.cols() == 0) throw UserError("gpumemnet: cannot standardise an empty training set");
  Standardizer s;
  s.mean = x.rowwise().mean();
  const Eigen::MatrixXd centred = x.colwise() - s.mean;
  s.scale = (centred.array().square().rowwise().sum() / static_cast<double>(x.cols())).sqrt();
  for (Eigen::Index i = 0; i < s.scale.size(); ++i) {
    if (s.scale(i) < 1e-12) s.scale(i) = 1.0;  // constant feature (e.g. conv in the MLP set)
  }
  return s;
}

Eigen::MatrixXd Standardizer::apply(const Eigen::MatrixXd& x) const {
  if (x.rows() != mean.size()) {
    throw UserError(fmt::format("gpumemnet: {} features, standardiser expects {}", x.rows(), mean.size()));
  }
  return (x.colwise() - mean).array().colwise() / scale.array();
}

}  // namespace colo::estimate
