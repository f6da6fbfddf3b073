#include "estimate/gpumemnet/mlp_classifier.h"

#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "core/error.h"

namespace colo::estimate {

std::uint64_t DeterministicRng::next() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double DeterministicRng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double DeterministicRng::normal() {
  const double u1 = 1.0 - uniform();  // (0, 1]: log stays finite
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

std::size_t DeterministicRng::below(std::size_t n) { return static_cast<std::size_t>(next() % n); }

namespace {

// Column-wise softmax, shifted by the column maximum so exp() cannot overflow.
Eigen::MatrixXd softmax_columns(const Eigen::MatrixXd& z) {
  Eigen::MatrixXd p = z.rowwise() - z.colwise().maxCoeff();
  p = p.array().exp();
  p.array().rowwise() /= p.colwise().sum().array();
  return p;
}

void check_labels(const std::vector<int>& labels, Eigen::Index n, int classes) {
  if (static_cast<Eigen::Index>(labels.size()) != n) {
    throw UserError(fmt::format("mlp: {} labels for {} samples", labels.size(), n));
  }
  for (int y : labels) {
    if (y < 0 || y >= classes) throw UserError(fmt::format("mlp: label {} outside [0, {})", y, classes));
  }
}

}  // namespace

MlpClassifier::MlpClassifier(const std::vector<int>& sizes, std::uint64_t seed) {
  if (sizes.size() < 2) throw UserError("mlp: need at least an input and an output size");
  for (int s : sizes) {
    if (s <= 0) throw UserError(fmt::format("mlp: layer size {} must be positive", s));
  }
  DeterministicRng rng(seed);
  for (std::size_t l = 1; l < sizes.size(); ++l) {
    DenseLayer layer;
    // He initialisation suits ReLU: keeps activation variance roughly constant through depth.
    const double scale = std::sqrt(2.0 / sizes[l - 1]);
    layer.weight = Eigen::MatrixXd(sizes[l], sizes[l - 1]);
    for (Eigen::Index c = 0; c < layer.weight.cols(); ++c) {
      for (Eigen::Index r = 0; r < layer.weight.rows(); ++r) layer.weight(r, c) = scale * rng.normal();
    }
    layer.bias = Eigen::VectorXd::Zero(sizes[l]);
    layers_.push_back(std::move(layer));
  }
}

MlpClassifier::MlpClassifier(std::vector<DenseLayer> layers) : layers_(std::move(layers)) {
  if (layers_.empty()) throw UserError("mlp: no layers");
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const auto& L = layers_[l];
    if (L.weight.rows() == 0 || L.weight.cols() == 0 || L.bias.size() != L.weight.rows()) {
      throw UserError(fmt::format("mlp: layer {} has weight {}×{} and bias {}", l, L.weight.rows(),
                                  L.weight.cols(), L.bias.size()));
    }
    if (l > 0 && L.weight.cols() != layers_[l - 1].weight.rows()) {
      throw UserError(fmt::format("mlp: layer {} takes {} inputs but layer {} gives {}", l,
                                  L.weight.cols(), l - 1, layers_[l - 1].weight.rows()));
    }
  }
}

std::vector<int> MlpClassifier::sizes() const {
  std::vector<int> s{inputs()};
  for (const auto& L : layers_) s.push_back(static_cast<int>(L.weight.rows()));
  return s;
}

std::size_t MlpClassifier::parameter_count() const {
  std::size_t n = 0;
  for (const auto& L : layers_) n += static_cast<std::size_t>(L.weight.size() + L.bias.size());
  return n;
}

Eigen::MatrixXd MlpClassifier::predict_proba(const Eigen::MatrixXd& x) const {
  if (x.rows() != inputs()) {
    throw UserError(fmt::format("mlp: expects {} features, got {}", inputs(), x.rows()));
  }
  Eigen::MatrixXd a = x;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    Eigen::MatrixXd z = layers_[l].weight * a;
    z.colwise() += layers_[l].bias;
    a = (l + 1 < layers_.size()) ? Eigen::MatrixXd(z.cwiseMax(0.0)) : softmax_columns(z);
  }
  return a;
}

double MlpClassifier::loss_and_gradient(const Eigen::MatrixXd& x, const std::vector<int>& labels,
                                        double l2, MlpGradients& grads) const {
  if (x.rows() != inputs()) {
    throw UserError(fmt::format("mlp: expects {} features, got {}", inputs(), x.rows()));
  }
  const Eigen::Index n = x.cols();
  if (n == 0) throw UserError("mlp: empty batch");
  check_labels(labels, n, classes());

  // Forward, keeping every layer's input (post-activation) for the backward pass.
  std::vector<Eigen::MatrixXd> inputs_of(layers_.size());
  Eigen::MatrixXd a = x;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    inputs_of[l] = a;
    Eigen::MatrixXd z = layers_[l].weight * a;
    z.colwise() += layers_[l].bias;
    a = (l + 1 < layers_.size()) ? Eigen::MatrixXd(z.cwiseMax(0.0)) : softmax_columns(z);
  }

  double loss = 0.0;
  Eigen::MatrixXd delta = a;  // dLoss/dz of the output layer: (p - onehot) / n
  for (Eigen::Index i = 0; i < n; ++i) {
    const int y = labels[static_cast<std::size_t>(i)];
    loss -= std::log(std::max(a(y, i), 1e-300));
    delta(y, i) -= 1.0;
  }
  loss /= static_cast<double>(n);
  delta /= static_cast<double>(n);

  grads.resize(layers_.size());
  for (std::size_t l = layers_.size(); l-- > 0;) {
    const auto& L = layers_[l];
    grads[l].weight = delta * inputs_of[l].transpose() + l2 * L.weight;
    grads[l].bias = delta.rowwise().sum();
    loss += 0.5 * l2 * L.weight.squaredNorm();
    if (l > 0) {
      // ReLU passes the gradient where its output (this layer's input) was positive.
      Eigen::MatrixXd back = L.weight.transpose() * delta;
      delta = (inputs_of[l].array() > 0.0).select(back, 0.0);
    }
  }
  return loss;
}

nlohmann::json MlpClassifier::to_json() const {
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& L : layers_) {
    std::vector<double> w(L.weight.data(), L.weight.data() + L.weight.size());  // column-major
    std::vector<double> b(L.bias.data(), L.bias.data() + L.bias.size());
    layers.push_back({{"out", L.weight.rows()}, {"in", L.weight.cols()}, {"weight", w}, {"bias", b}});
  }
  return {{"layers", layers}};
}

MlpClassifier MlpClassifier::from_json(const nlohmann::json& j, const std::string& where) {
  try {
    std::vector<DenseLayer> layers;
    for (const auto& jl : j.at("layers")) {
      const auto out = jl.at("out").get<Eigen::Index>();
      const auto in = jl.at("in").get<Eigen::Index>();
      const auto w = jl.at("weight").get<std::vector<double>>();
      const auto b = jl.at("bias").get<std::vector<double>>();
      if (out <= 0 || in <= 0 || out > (1 << 20) || in > (1 << 20) ||  // bounds first: out × in must not overflow
          static_cast<Eigen::Index>(w.size()) != out * in ||
          static_cast<Eigen::Index>(b.size()) != out) {
        throw UserError(fmt::format("{}: layer {} declares {}×{} but holds {} weights and {} biases",
                                    where, layers.size(), out, in, w.size(), b.size()));
      }
      DenseLayer L;
      L.weight = Eigen::Map<const Eigen::MatrixXd>(w.data(), out, in);
      L.bias = Eigen::Map<const Eigen::VectorXd>(b.data(), out);
      // Trained weights are O(1); past 1e6 the logits overflow to inf and the probabilities to NaN.
      if (!L.weight.allFinite() || !L.bias.allFinite() || L.weight.cwiseAbs().maxCoeff() > 1e6 ||
          L.bias.cwiseAbs().maxCoeff() > 1e6) {
        throw UserError(fmt::format("{}: layer {} holds non-finite numbers or numbers beyond ±1e6", where, layers.size()));
      }
      layers.push_back(std::move(L));
    }
    return MlpClassifier(std::move(layers));
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("{}: malformed network: {}", where, e.what()));
  } catch (const UserError& e) {
    const std::string msg = e.what();
    if (msg.rfind(where, 0) == 0) throw;
    throw UserError(fmt::format("{}: {}", where, msg));
  }
}

double train_adam(MlpClassifier& net, const Eigen::MatrixXd& x, const std::vector<int>& labels,
                  const AdamOptions& o) {
  const Eigen::Index n = x.cols();
  if (n == 0) throw UserError("mlp: no training samples");
  check_labels(labels, n, net.classes());
  if (o.epochs <= 0 || o.batch_size <= 0) throw UserError("mlp: epochs and batch size must be positive");

  auto& layers = net.layers();
  MlpGradients m(layers.size()), v(layers.size()), g;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    m[l].weight = Eigen::MatrixXd::Zero(layers[l].weight.rows(), layers[l].weight.cols());
    m[l].bias = Eigen::VectorXd::Zero(layers[l].bias.size());
    v[l] = m[l];
  }
  std::vector<Eigen::Index> order(static_cast<std::size_t>(n));
  for (Eigen::Index i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  DeterministicRng rng(o.seed);

  double b1t = 1.0, b2t = 1.0, epoch_loss = 0.0;
  Eigen::MatrixXd xb;
  std::vector<int> yb;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    rng.shuffle(order);
    epoch_loss = 0.0;
    for (Eigen::Index start = 0; start < n; start += o.batch_size) {
      const Eigen::Index size = std::min<Eigen::Index>(o.batch_size, n - start);
      xb.resize(x.rows(), size);
      yb.resize(static_cast<std::size_t>(size));
      for (Eigen::Index k = 0; k < size; ++k) {
        const Eigen::Index i = order[static_cast<std::size_t>(start + k)];
        xb.col(k) = x.col(i);
        yb[static_cast<std::size_t>(k)] = labels[static_cast<std::size_t>(i)];
      }
      epoch_loss += net.loss_and_gradient(xb, yb, o.l2, g) * static_cast<double>(size);
      b1t *= o.beta1;
      b2t *= o.beta2;
      const double step = o.learning_rate * std::sqrt(1.0 - b2t) / (1.0 - b1t);
      for (std::size_t l = 0; l < layers.size(); ++l) {
        m[l].weight = o.beta1 * m[l].weight + (1.0 - o.beta1) * g[l].weight;
        m[l].bias = o.beta1 * m[l].bias + (1.0 - o.beta1) * g[l].bias;
        v[l].weight = o.beta2 * v[l].weight + (1.0 - o.beta2) * g[l].weight.cwiseAbs2();
        v[l].bias = o.beta2 * v[l].bias + (1.0 - o.beta2) * g[l].bias.cwiseAbs2();
        layers[l].weight.array() -= step * m[l].weight.array() / (v[l].weight.array().sqrt() + o.epsilon);
        layers[l].bias.array() -= step * m[l].bias.array() / (v[l].bias.array().sqrt() + o.epsilon);
      }
    }
    epoch_loss /= static_cast<double>(n);
  }
  return epoch_loss;
}

}  // namespace colo::estimate
