#include "estimate/graph/model_graph.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/one_line.h"
#include "common/ascii_lower.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string>

namespace colo::estimate {

std::string_view to_string(LayerKind k) {
  switch (k) {
    case LayerKind::Conv: return "conv";
    case LayerKind::ConvTranspose: return "conv_transpose";
    case LayerKind::Linear: return "linear";
    case LayerKind::BatchNorm: return "batchnorm";
    case LayerKind::LayerNorm: return "layernorm";
    case LayerKind::GroupNorm: return "groupnorm";
    case LayerKind::ReLU: return "relu";
    case LayerKind::Sigmoid: return "sigmoid";
    case LayerKind::Tanh: return "tanh";
    case LayerKind::Activation: return "activation";
    case LayerKind::Softmax: return "softmax";
    case LayerKind::Dropout: return "dropout";
    case LayerKind::MaxPool: return "maxpool";
    case LayerKind::AvgPool: return "avgpool";
    case LayerKind::AdaptiveAvgPool: return "adaptive_avgpool";
    case LayerKind::Flatten: return "flatten";
    case LayerKind::Identity: return "identity";
    case LayerKind::Embedding: return "embedding";
    case LayerKind::Attention: return "attention";
    case LayerKind::Add: return "add";
    case LayerKind::Concat: return "concat";
    case LayerKind::Container: return "container";
    case LayerKind::Unknown: return "unknown";
  }
  return "unknown";
}

std::string_view to_string(SavedTensor::What w) {
  switch (w) {
    case SavedTensor::What::Input: return "input";
    case SavedTensor::What::Output: return "output";
    case SavedTensor::What::Mask: return "mask";
    case SavedTensor::What::Indices: return "indices";
    case SavedTensor::What::Stats: return "stats";
    case SavedTensor::What::Other: return "other";
  }
  return "other";
}

std::string_view to_string(ModelFamily f) {
  switch (f) {
    case ModelFamily::MLP: return "mlp";
    case ModelFamily::CNN: return "cnn";
    case ModelFamily::Transformer: return "transformer";
    case ModelFamily::Unknown: return "unknown";
  }
  return "unknown";
}

namespace {

bool starts_with(const std::string& s, std::string_view p) { return s.rfind(p, 0) == 0; }

}  // namespace

LayerKind classify_layer_type(std::string_view type_name) {
  // A type name is an identifier; anything else (a corrupted "Conv\xff\xfe2d", "Conv2d\x01") is
  // no known layer, never the one whose name it starts with.
  for (const char c : type_name) {
    const auto u = static_cast<unsigned char>(c);
    if (!(std::isalnum(u) || c == '_' || c == '.') || u >= 0x80) return LayerKind::Unknown;
  }
  const std::string t = ascii_lower(type_name);
  // Order matters: the more specific names first (convtranspose before conv, ...).
  if (starts_with(t, "convtranspose") || starts_with(t, "conv2dtranspose")) return LayerKind::ConvTranspose;
  if (t == "conv1d" && type_name == "Conv1D") return LayerKind::Linear;  // HF GPT-2's Conv1D is a linear layer
  if (starts_with(t, "conv") || t == "separableconv2d_pointwise" || t == "depthwiseconv2d")
    return LayerKind::Conv;
  if (t == "linear" || t == "dense" || t == "nonDynamicallyQuantizableLinear" ||
      t == "nondynamicallyquantizablelinear")
    return LayerKind::Linear;
  if (starts_with(t, "batchnorm") || t == "batchnormalization" || starts_with(t, "syncbatchnorm"))
    return LayerKind::BatchNorm;
  if (t == "layernorm" || t == "layernormalization" || t == "t5layernorm" || t == "rmsnorm")
    return LayerKind::LayerNorm;
  if (t == "groupnorm" || t == "instancenorm2d") return LayerKind::GroupNorm;
  if (t == "relu" || t == "relu6") return LayerKind::ReLU;
  if (t == "sigmoid" || t == "hardsigmoid") return LayerKind::Sigmoid;
  if (t == "tanh") return LayerKind::Tanh;
  if (t == "gelu" || t == "geluactivation" || t == "newgeluactivation" || t == "fastgeluactivation" ||
      t == "quickgeluactivation" || t == "silu" || t == "swish" || t == "softplus" || t == "elu" ||
      t == "selu" || t == "celu" || t == "mish" || t == "hardswish" || t == "prelu" ||
      t == "leakyrelu" || t == "leaky_relu" ||
      t == "softsign" || t == "tanhshrink" || t == "logsigmoid")
    return LayerKind::Activation;
  if (t == "softmax" || t == "logsoftmax" || t == "softmax2d") return LayerKind::Softmax;
  if (starts_with(t, "dropout") || t == "alphadropout" || t == "stochasticdepth" || t == "droppath")
    return LayerKind::Dropout;
  if (starts_with(t, "maxpool") || starts_with(t, "maxpooling")) return LayerKind::MaxPool;
  if (starts_with(t, "adaptiveavgpool") || starts_with(t, "globalaveragepooling") ||
      starts_with(t, "adaptivemaxpool"))
    return LayerKind::AdaptiveAvgPool;
  if (starts_with(t, "avgpool") || starts_with(t, "averagepooling")) return LayerKind::AvgPool;
  if (t == "flatten" || t == "reshape" || t == "view" || t == "unflatten") return LayerKind::Flatten;
  if (t == "identity" || t == "inputlayer") return LayerKind::Identity;
  if (t == "embedding") return LayerKind::Embedding;
  if (t == "add") return LayerKind::Add;  // Keras' Add layer
  if (t == "concatenate" || t == "concat") return LayerKind::Concat;
  if (t.find("attention") != std::string::npos) return LayerKind::Attention;
  return LayerKind::Unknown;
}

std::int64_t Layer::out_elems() const {
  std::int64_t n = 1;
  for (auto d : out_shape) n *= d;
  return n;
}

namespace {

// Bounds on what a parser may hand to finalize(). Far beyond any model one GPU trains, they make
// every product below and in the estimators (× batch ≤ limits::kMaxBatch = 2^20) fit in int64:
// a tensor ≤ 2^32 elements per sample, ≤ 2^40 bytes per sample kept in all, ≤ 2^40 parameters.
constexpr std::int64_t kMaxTensorElems = std::int64_t{1} << 32;
constexpr std::int64_t kMaxSampleBytes = std::int64_t{1} << 40;
constexpr std::int64_t kMaxParams = std::int64_t{1} << 40;
constexpr std::int64_t kMaxFeatures = std::int64_t{1} << 20;

[[noreturn]] void too_big(const ModelGraph& g, const std::string& what) {
  // The name and layer types come from the input: one_line keeps a control character in them
  // from breaking the one-line message.
  // A summary being parsed has no name yet (its file, which the caller names, gives it one).
  const std::string who = g.name.empty() ? fmt::format("model ({})", g.source_format)
                                         : fmt::format("model '{}' ({})", g.name, g.source_format);
  throw UserError(one_line(fmt::format("{}: {}; not a model one GPU can train", who, what)));
}

std::int64_t checked_elems(const ModelGraph& g, const std::vector<std::int64_t>& shape, const std::string& whose) {
  std::int64_t n = 1;
  for (auto d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxTensorElems)
      too_big(g, fmt::format("{} has more than 2^32 elements per sample or a negative dimension", whose));
  }
  return n;
}

void check_magnitudes(const ModelGraph& g) {
  if (g.dtype_bytes < 1 || g.dtype_bytes > 8) too_big(g, fmt::format("dtype of {} bytes", g.dtype_bytes));
  checked_elems(g, g.input_shape, "the input");
  std::int64_t params = 0;
  for (std::size_t i = 0; i < g.layers.size(); ++i) {
    const Layer& l = g.layers[i];
    const std::string who = fmt::format("layer {} ({})", i + 1, l.type_name);
    checked_elems(g, l.out_shape, who);
    if (l.params < 0 || __builtin_add_overflow(params, l.params, &params) || params > kMaxParams)
      too_big(g, "more than 2^40 parameters");
    for (std::int64_t f : {l.kernel, l.in_features, l.out_features, l.attn_heads})
      if (f < 0 || f > kMaxFeatures) too_big(g, fmt::format("{} has a size parameter of {}", who, f));
    if (l.kind == LayerKind::Attention) {
      const std::int64_t seq = l.out_shape.size() >= 2 ? l.out_shape.front() : 1;
      std::int64_t hss = std::max<std::int64_t>(l.attn_heads, 1);
      if (__builtin_mul_overflow(hss, seq, &hss) || __builtin_mul_overflow(hss, seq, &hss) || hss > kMaxTensorElems)
        too_big(g, fmt::format("{} has more than 2^32 attention scores per sample", who));
    }
  }
}

}  // namespace

void ModelGraph::finalize() {
  check_magnitudes(*this);
  auto elems = [](const std::vector<std::int64_t>& s) {
    std::int64_t n = 1;
    for (auto d : s) n *= d;
    return n;
  };
  std::int64_t in_elems = elems(input_shape);
  std::vector<std::int64_t> prev_shape = input_shape;
  const std::int64_t b = dtype_bytes;
  std::int64_t kept_bytes = 0;
  auto positions = [&](const std::vector<std::int64_t>& s) {
    return s.size() >= 2 && s.front() > 0 ? elems(s) / s.front() : 0;
  };
  // Every tensor so far, newest last: (producing layer, per-sample shape).
  std::vector<std::pair<int, std::vector<std::int64_t>>> outputs = {{Layer::kInputTensor, input_shape}};
  for (std::size_t i = 0; i < layers.size(); ++i) {
    Layer& l = layers[i];
    l.saved.clear();
    const std::int64_t out = l.out_elems();
    std::vector<std::int64_t> in_shape = prev_shape;
    // A parser that knows the block structure may name the tensor a layer reads (input_from set
    // before finalize); otherwise it is searched for below.
    if (l.input_from != Layer::kPreviousTensor) {
      const auto it = std::find_if(outputs.rbegin(), outputs.rend(), [&](const auto& o) { return o.first == l.input_from; });
      if (it != outputs.rend()) {
        in_shape = it->second;
        in_elems = elems(in_shape);
      } else {
        l.input_from = Layer::kPreviousTensor;
      }
    }
    const bool pinned = l.input_from != Layer::kPreviousTensor;
    // A conv/linear whose in-channels are known may read another tensor than the previous layer's
    // output: a residual block's input (the latest earlier tensor with those channels and at least
    // the output's positions), else a concatenation (a dense block): size the input from it.
    if (!pinned && l.in_features > 0 && !prev_shape.empty() && in_elems > 0) {
      if (l.kind == LayerKind::Conv || l.kind == LayerKind::ConvTranspose) {
        const std::int64_t c = prev_shape.front();
        bool found = false;
        if (c != l.in_features && l.kind == LayerKind::Conv && l.out_shape.size() >= 2) {
          for (auto it = outputs.rbegin(); it != outputs.rend() && !found; ++it) {
            if (it->second.size() >= 2 && it->second.front() == l.in_features &&
                positions(it->second) >= positions(l.out_shape)) {
              in_shape = it->second;
              in_elems = elems(in_shape);
              l.input_from = it->first;
              found = true;
            }
          }
        }
        if (!found && c > 0 && in_elems % c == 0) in_elems = in_elems / c * l.in_features;
      } else if (l.kind == LayerKind::Linear && in_elems % l.in_features != 0) {
        in_elems = l.in_features;  // the (flattened) features the layer really reads
      }
    }
    if (in_elems > kMaxTensorElems)  // in-features × positions: ≤ 2^20 × 2^32, no overflow
      too_big(*this, fmt::format("layer {} ({}) reads more than 2^32 elements per sample", i + 1, l.type_name));
    l.input_elems = in_elems;
    const std::int64_t out_pos = positions(l.out_shape);
    l.strided = l.kind == LayerKind::Conv && out_pos > 0 && 2 * out_pos <= positions(in_shape);
    // Channels of a batch/group norm: the first per-sample dim (C of C×H×W, features of a vector).
    const std::int64_t channels = l.out_shape.empty() ? 1 : l.out_shape.front();
    using W = SavedTensor::What;
    switch (l.kind) {
      case LayerKind::Conv:
      case LayerKind::ConvTranspose:
      case LayerKind::Linear:
      case LayerKind::AvgPool:
      case LayerKind::AdaptiveAvgPool:
      case LayerKind::Activation:
        l.saved.push_back({W::Input, in_elems * b, 0});
        break;
      case LayerKind::BatchNorm:
        l.saved.push_back({W::Input, in_elems * b, 0});
        l.saved.push_back({W::Stats, 0, 2 * channels * b});  // save_mean, save_invstd
        break;
      case LayerKind::LayerNorm:
      case LayerKind::GroupNorm: {
        // mean and rstd per normalised row: every dim but the last for LayerNorm.
        const std::int64_t last = l.out_shape.empty() ? 1 : l.out_shape.back();
        const std::int64_t rows = last > 0 ? out / last : 0;
        l.saved.push_back({W::Input, in_elems * b, 0});
        l.saved.push_back({W::Stats, 2 * rows * b, 0});
        break;
      }
      case LayerKind::ReLU:
      case LayerKind::Sigmoid:
      case LayerKind::Tanh:
      case LayerKind::Softmax:
        l.saved.push_back({W::Output, out * b, 0});
        break;
      case LayerKind::Dropout:
        if (l.type_name == "StochasticDepth") {
          // torchvision StochasticDepth(mode="row") multiplies by a per-sample noise tensor.
          l.saved.push_back({W::Mask, b, 0});
        } else {
          l.saved.push_back({W::Mask, out, 0});  // bool mask, one byte per element
        }
        break;
      case LayerKind::MaxPool:
        l.saved.push_back({W::Input, in_elems * b, 0});
        l.saved.push_back({W::Indices, out * 8, 0});  // int64 argmax per output element
        break;
      case LayerKind::Embedding: {
        // The int64 ids: one per output row (the last dim is the embedding width).
        const std::int64_t width = l.out_shape.empty() ? 1 : l.out_shape.back();
        l.saved.push_back({W::Indices, (width > 0 ? out / width : out) * 8, 0});
        break;
      }
      case LayerKind::Attention: {
        const std::int64_t seq = l.out_shape.size() >= 2 ? l.out_shape.front() : 1;
        if (l.attn_materialized) {
          // q, k, v, the relative-position keys (2S) and the biased queries (2 x S*H), the
          // attention output before projection: ~7 x S*H; softmax output and dropped-out
          // probabilities (2 x heads*S*S floats) and the dropout mask (bytes).
          const std::int64_t hss = l.attn_heads * seq * seq;
          l.saved.push_back({W::Input, 7 * out * b, 0});
          l.saved.push_back({W::Other, 2 * hss * b, 0});
          l.saved.push_back({W::Mask, hss, 0});
        } else {
          // Fused (memory-efficient) attention keeps q, k, v, its output and the log-sum-exp.
          l.saved.push_back({W::Input, 3 * out * b, 0});
          l.saved.push_back({W::Output, out * b, 0});
          l.saved.push_back({W::Stats, std::max<std::int64_t>(l.attn_heads, 1) * seq * b, 0});
        }
        break;
      }
      case LayerKind::Add:     // AddBackward and CatBackward keep only sizes
      case LayerKind::Concat:
      case LayerKind::Flatten:
      case LayerKind::Identity:
      case LayerKind::Container:
      case LayerKind::Unknown:
        break;
    }
    // The input of the next layer is this layer's output; a container that only reports its
    // last child's output (same element count) does not change it.
    if (!l.out_shape.empty()) {
      in_elems = out;
      prev_shape = l.out_shape;
      outputs.emplace_back(static_cast<int>(i), l.out_shape);
    }
    // Each term is ≤ 2^39 (7 × 2^32 elements × 8 bytes); their sum is what every estimator scales by
    // the batch, so it is bounded too.
    std::int64_t layer_bytes = out * b;
    for (const SavedTensor& t : l.saved) layer_bytes += t.per_sample_bytes + t.fixed_bytes;
    if (__builtin_add_overflow(kept_bytes, layer_bytes, &kept_bytes) || kept_bytes > kMaxSampleBytes)
      too_big(*this, "more than 2^40 bytes per sample in activations and tensors kept for backward");
  }
}

std::int64_t ModelGraph::total_params() const {
  std::int64_t n = 0;
  for (const auto& l : layers) n += l.params;
  return n;
}

std::int64_t ModelGraph::total_activations() const {
  std::int64_t n = 0;
  for (const auto& l : layers)
    if (l.kind != LayerKind::Container) n += l.out_elems();
  return n;
}

std::int64_t ModelGraph::count(LayerKind k) const {
  return std::count_if(layers.begin(), layers.end(), [k](const Layer& l) { return l.kind == k; });
}

std::vector<std::string> ModelGraph::unknown_types() const {
  std::set<std::string> s;
  for (const auto& l : layers)
    if (l.kind == LayerKind::Unknown) s.insert(l.type_name);
  return {s.begin(), s.end()};
}

}  // namespace colo::estimate
