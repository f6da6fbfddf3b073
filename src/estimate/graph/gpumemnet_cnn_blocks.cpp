#include "estimate/graph/gpumemnet_cnn_blocks.h"
#include "common/ascii_lower.h"

#include <cctype>

namespace colo::estimate {

namespace {

// a * b == target without overflow (a row's counts reach 2^50 each, so their product may not fit)
bool product_is(std::int64_t a, std::int64_t b, std::int64_t target) {
  std::int64_t p = 0;
  return !__builtin_mul_overflow(a, b, &p) && p == target;
}

// The generator's DenseBlock(num_layers=4).
constexpr int kDenseBlockLayers = 4;

bool is_activation(LayerKind k) {
  return k == LayerKind::ReLU || k == LayerKind::Activation || k == LayerKind::Tanh || k == LayerKind::Sigmoid;
}

// Walks the tuples in order, appending layers; every step either consumes what the structure
// expects or reports failure.
class Builder {
 public:
  Builder(const std::vector<GpuMemNetTuple>& t, std::int64_t c, std::int64_t hw) : t_(t), c_(c), hw_(hw) {}

  bool done() const { return pos_ == t_.size(); }
  bool at(std::string_view type) const { return pos_ < t_.size() && ascii_lower(t_[pos_].type) == type; }
  std::int64_t channels() const { return c_; }
  int last() const { return static_cast<int>(layers_.size()) - 1; }
  std::vector<Layer>& layers() { return layers_; }
  const GpuMemNetTuple& next() const { return t_[pos_]; }

  // Conv2d(cin, cout, k) with bias: params = (cin*k*k + 1) * cout; cout derived when 0.
  bool conv(std::int64_t cin, std::int64_t k, std::int64_t cout, int input_from) {
    if (!at("conv2d")) return false;
    const auto& tu = t_[pos_];
    const std::int64_t per_out = cin * k * k + 1;
    if (cin <= 0 || tu.params % per_out != 0) return false;
    const std::int64_t derived = tu.params / per_out;
    if (derived <= 0 || (cout > 0 && derived != cout)) return false;
    Layer l = take();
    l.in_features = cin;
    l.out_features = derived;
    l.kernel = k;
    l.input_from = input_from;
    c_ = derived;
    if (tu.acts > 0) hw_ = tu.acts;
    l.out_shape = {c_, hw_};
    layers_.push_back(std::move(l));
    return true;
  }

  // A layer that keeps the channels (batch norm, activation, dropout, pooling, Identity).
  bool plain(std::string_view type) {
    if (!at(type)) return false;
    return plain_any();
  }
  bool plain_any() {
    if (done()) return false;
    const auto& tu = t_[pos_];
    Layer l = take();
    if (l.kind == LayerKind::BatchNorm && tu.params != 2 * c_) return false;
    if (tu.acts > 0) hw_ = tu.acts;
    l.out_shape = {c_, hw_};
    layers_.push_back(std::move(l));
    return true;
  }

  // ConvBlock: conv [bn] activation [dropout].
  bool conv_block(std::int64_t cin, std::int64_t k, std::int64_t cout, int input_from = Layer::kPreviousTensor) {
    if (!conv(cin, k, cout, input_from)) return false;
    if (at("batch_norm2d") && !plain_any()) return false;
    if (done() || !is_activation(gpumemnet_layer(next().type).kind) || !plain_any()) return false;
    if (at("dropout") && !plain_any()) return false;
    return true;
  }

  // A layer the row does not list: a sum or a concatenation producing a new tensor.
  void synthesized(LayerKind kind, std::int64_t channels, std::vector<int> extra_inputs) {
    Layer l;
    l.kind = kind;
    l.type_name = kind == LayerKind::Add ? "add" : "cat";
    l.name = l.type_name;
    l.source_activations = 0;  // not in the source: the GPUMemNet features must not count it
    c_ = channels;
    l.out_shape = {c_, hw_};
    l.extra_inputs = std::move(extra_inputs);
    layers_.push_back(std::move(l));
  }

  // AdaptiveAvgPool2d, Linear(c, classes), Softmax or Sigmoid, and nothing after.
  bool head() {
    if (!at("adaptive_avg_pool2d")) return false;
    {
      Layer l = take();
      l.out_shape = {c_, 1};
      layers_.push_back(std::move(l));
    }
    if (!at("linear")) return false;
    const auto& tu = t_[pos_];
    if (tu.acts <= 0 || !product_is(c_ + 1, tu.acts, tu.params)) return false;
    Layer l = take();
    l.in_features = c_;
    l.out_features = tu.acts;
    c_ = tu.acts;
    l.out_shape = {c_};
    layers_.push_back(std::move(l));
    if (!at("softmax") && !at("sigmoid")) return false;
    Layer f = take();
    f.out_shape = {c_};
    layers_.push_back(std::move(f));
    return done();
  }

 private:
  Layer take() {
    Layer l = gpumemnet_layer(t_[pos_].type);
    l.name = std::to_string(pos_);
    l.params = t_[pos_].params;
    l.source_activations = t_[pos_].acts;
    ++pos_;
    return l;
  }

  const std::vector<GpuMemNetTuple>& t_;
  std::size_t pos_ = 0;
  std::int64_t c_, hw_;
  std::vector<Layer> layers_;
};

bool chain(Builder& b) {
  if (!b.at("conv2d")) return false;
  while (b.at("conv2d")) {
    if (!b.conv_block(b.channels(), 3, 0)) return false;
    if (b.at("maxpool2d") && !b.plain_any()) return false;
  }
  return b.head();
}

bool residual(Builder& b) {
  int block_in = Layer::kInputTensor;
  if (!b.at("conv2d") && !b.at("identity")) return false;
  while (b.at("conv2d") || b.at("identity")) {
    const std::int64_t cin = b.channels();
    std::int64_t cout = 0;
    if (b.at("identity")) {
      b.plain_any();  // nn.Identity shortcut: the block input itself
      cout = cin;
    } else {
      if (!b.conv(cin, 1, 0, Layer::kPreviousTensor)) return false;
      cout = b.channels();
      if ((b.at("batch_norm2d") || b.at("identity")) && !b.plain_any()) return false;
    }
    const int shortcut = b.last();
    if (!b.conv_block(cin, 3, cout, block_in)) return false;  // conv1 reads the block input
    if (!b.conv_block(cout, 3, cout)) return false;
    b.synthesized(LayerKind::Add, cout, {shortcut});
    block_in = b.last();
  }
  return b.head();
}

bool dense(Builder& b) {
  if (!b.at("conv2d")) return false;
  int x = Layer::kInputTensor;     // the block input's producer
  std::vector<int> features = {x};  // producers of the tensors torch.cat joins, newest last
  std::int64_t width = b.channels();
  int in_block = 0;                 // dense layers so far in the current block
  bool after_block = false;
  auto others = [&] { return std::vector<int>(features.begin(), features.end() - 1); };
  while (b.at("conv2d")) {
    const auto& tu = b.next();
    if (after_block && in_block == 0 && product_is(width + 1, width / 2, tu.params)) {
      // TransitionBlock: 1x1 ConvBlock to width/2 (ReLU, no dropout), then AvgPool2d when H,W > 1.
      if (!b.conv_block(width, 1, width / 2)) return false;
      if (b.at("d") && !b.plain_any()) return false;
      width = b.channels();
      features = {b.last()};
      after_block = false;
      continue;
    }
    b.synthesized(LayerKind::Concat, width, others());  // torch.cat(features, 1), even of one tensor
    if (!b.conv_block(width, 3, 0)) return false;
    width += b.channels();
    features.push_back(b.last());
    if (++in_block == kDenseBlockLayers) {
      b.synthesized(LayerKind::Concat, width, others());  // the block's output
      features = {b.last()};
      in_block = 0;
      after_block = true;
    }
  }
  return in_block == 0 && b.head();
}

}  // namespace

Layer gpumemnet_layer(const std::string& type) {
  Layer l;
  l.type_name = type;
  const std::string t = ascii_lower(type);
  if (t == "conv2d") l.kind = LayerKind::Conv;
  else if (t == "batch_norm2d" || t == "batch_normalization") l.kind = LayerKind::BatchNorm;
  else if (t == "adaptive_avg_pool2d") l.kind = LayerKind::AdaptiveAvgPool;
  // The generator's dense-transition average pool is logged as 'd' (its name cut to the last char).
  else if (t == "d") l.kind = LayerKind::AvgPool;
  else l.kind = classify_layer_type(type);
  return l;
}

std::optional<std::vector<Layer>> rebuild_gpumemnet_cnn(std::string_view arch, const std::vector<GpuMemNetTuple>& tuples,
                                                         std::int64_t in_channels, std::int64_t in_hw) {
  Builder b(tuples, in_channels, in_hw);
  bool ok = false;
  if (arch == "residual") ok = residual(b);
  else if (arch == "dense") ok = dense(b);
  else if (arch == "uniform" || arch == "pyramid" || arch == "reverse_pyramid" || arch == "gradual" ||
           arch == "bottleneck" || arch == "hourglass")
    ok = chain(b);
  if (!ok) return std::nullopt;
  return std::move(b.layers());
}

}  // namespace colo::estimate
