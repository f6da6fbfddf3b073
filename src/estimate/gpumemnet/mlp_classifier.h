#pragma once
// A small fully connected softmax classifier (ReLU hidden layers) in Eigen, trained with Adam on
// softmax cross-entropy. GPUMemNet's ensemble members are instances of it. Everything is
// deterministic for a given seed: weights are drawn from our own generator (not <random>'s
// distributions, whose output differs between standard libraries), and mini-batch order too.
#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

namespace colo::estimate {

// splitmix64: tiny, fast and fully specified, so a seed means the same numbers everywhere.
class DeterministicRng {
 public:
  explicit DeterministicRng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  double uniform();                       // [0, 1)
  double normal();                        // standard normal (Box-Muller)
  std::size_t below(std::size_t n);       // [0, n)
  template <class T>
  void shuffle(std::vector<T>& v) {       // Fisher-Yates
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  std::uint64_t state_;
};

struct DenseLayer {
  Eigen::MatrixXd weight;  // out × in
  Eigen::VectorXd bias;    // out
};

// Gradients have the same shapes as the layers they belong to.
using MlpGradients = std::vector<DenseLayer>;

class MlpClassifier {
 public:
  // sizes = {inputs, hidden..., classes}; He-initialised from seed.
  MlpClassifier(const std::vector<int>& sizes, std::uint64_t seed);
  explicit MlpClassifier(std::vector<DenseLayer> layers);  // validated: shapes must chain

  int inputs() const { return static_cast<int>(layers_.front().weight.cols()); }
  int classes() const { return static_cast<int>(layers_.back().weight.rows()); }
  std::vector<int> sizes() const;
  std::size_t parameter_count() const;

  // X holds one sample per column (features × n); result is classes × n probabilities.
  Eigen::MatrixXd predict_proba(const Eigen::MatrixXd& x) const;

  // Mean cross-entropy over the columns of x plus 0.5·l2·Σ‖W‖² (biases are not decayed);
  // fills grads (resized as needed) with its gradient. labels[i] in [0, classes()).
  double loss_and_gradient(const Eigen::MatrixXd& x, const std::vector<int>& labels, double l2,
                           MlpGradients& grads) const;

  std::vector<DenseLayer>& layers() { return layers_; }
  const std::vector<DenseLayer>& layers() const { return layers_; }

  nlohmann::json to_json() const;
  // `where` names the file (and member) in the one-line error thrown for malformed input.
  static MlpClassifier from_json(const nlohmann::json& j, const std::string& where);

 private:
  std::vector<DenseLayer> layers_;
};

struct AdamOptions {
  int epochs = 150;
  int batch_size = 64;
  double learning_rate = 3e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double l2 = 1e-4;
  std::uint64_t seed = 1;  // mini-batch order
};

// Trains in place on x (features × n) and labels; returns the final epoch's mean training loss.
double train_adam(MlpClassifier& net, const Eigen::MatrixXd& x, const std::vector<int>& labels,
                  const AdamOptions& options);

}  // namespace colo::estimate
