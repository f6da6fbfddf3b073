// The MLP library under GPUMemNet: gradients match finite differences, training separates a
// separable problem, the generator and training are reproducible, bad shapes are refused.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "estimate/gpumemnet/mlp_classifier.h"

namespace colo::estimate {
namespace {

Eigen::MatrixXd random_matrix(Eigen::Index r, Eigen::Index c, std::uint64_t seed) {
  DeterministicRng rng(seed);
  Eigen::MatrixXd m(r, c);
  for (Eigen::Index j = 0; j < c; ++j)
    for (Eigen::Index i = 0; i < r; ++i) m(i, j) = rng.normal();
  return m;
}

TEST(GpuMemNetMlp, GradientMatchesCentralDifferences) {
  MlpClassifier net({3, 5, 4, 3}, 7);
  const Eigen::MatrixXd x = random_matrix(3, 6, 11);
  const std::vector<int> y = {0, 1, 2, 2, 1, 0};
  const double l2 = 0.01;
  MlpGradients g;
  net.loss_and_gradient(x, y, l2, g);
  const double h = 1e-6;
  MlpGradients scratch;
  double worst = 0;
  for (std::size_t l = 0; l < net.layers().size(); ++l) {
    auto check = [&](double& param, double analytic) {
      const double keep = param;
      param = keep + h;
      const double up = net.loss_and_gradient(x, y, l2, scratch);
      param = keep - h;
      const double down = net.loss_and_gradient(x, y, l2, scratch);
      param = keep;
      const double numeric = (up - down) / (2 * h);
      worst = std::max(worst, std::abs(numeric - analytic) / std::max(1.0, std::abs(numeric)));
    };
    auto& L = net.layers()[l];
    for (Eigen::Index i = 0; i < L.weight.size(); ++i) check(L.weight.data()[i], g[l].weight.data()[i]);
    for (Eigen::Index i = 0; i < L.bias.size(); ++i) check(L.bias.data()[i], g[l].bias.data()[i]);
  }
  EXPECT_LT(worst, 1e-6);
}

TEST(GpuMemNetMlp, ProbabilitiesSumToOneAndSurviveHugeLogits) {
  MlpClassifier net({2, 4}, 3);
  net.layers()[0].weight *= 1e6;  // logits of order 1e6 would overflow a naive exp()
  const Eigen::MatrixXd p = net.predict_proba(random_matrix(2, 5, 1));
  ASSERT_TRUE(p.allFinite());
  for (Eigen::Index c = 0; c < p.cols(); ++c) EXPECT_NEAR(p.col(c).sum(), 1.0, 1e-12);
}

// Three classes by which of three bands x0 + x1 falls in: not linearly separable by one
// hyperplane per class pair unless the hidden layer works.
void make_bands(std::size_t n, std::uint64_t seed, Eigen::MatrixXd& x, std::vector<int>& y) {
  DeterministicRng rng(seed);
  x.resize(2, static_cast<Eigen::Index>(n));
  y.clear();
  for (std::size_t i = 0; i < n; ++i) {
    const double a = rng.uniform() * 4 - 2, b = rng.uniform() * 4 - 2;
    x(0, static_cast<Eigen::Index>(i)) = a;
    x(1, static_cast<Eigen::Index>(i)) = b;
    const double r = a * a + b * b;  // rings: needs the nonlinearity
    y.push_back(r < 1.0 ? 0 : (r < 2.5 ? 1 : 2));
  }
}

TEST(GpuMemNetMlp, LearnsASeparableProblem) {
  Eigen::MatrixXd x, xt;
  std::vector<int> y, yt;
  make_bands(600, 5, x, y);
  make_bands(300, 6, xt, yt);
  MlpClassifier net({2, 32, 16, 3}, 9);
  AdamOptions o;
  o.epochs = 150;
  o.batch_size = 32;
  o.learning_rate = 5e-3;
  const double loss = train_adam(net, x, y, o);
  EXPECT_LT(loss, 0.3);
  const Eigen::MatrixXd p = net.predict_proba(xt);
  int correct = 0;
  for (Eigen::Index i = 0; i < p.cols(); ++i) {
    Eigen::Index best;
    p.col(i).maxCoeff(&best);
    correct += best == yt[static_cast<std::size_t>(i)];
  }
  EXPECT_GT(static_cast<double>(correct) / static_cast<double>(yt.size()), 0.93);
}

TEST(GpuMemNetMlp, TrainingIsReproducible) {
  Eigen::MatrixXd x;
  std::vector<int> y;
  make_bands(100, 1, x, y);
  AdamOptions o;
  o.epochs = 5;
  MlpClassifier a({2, 8, 3}, 4), b({2, 8, 3}, 4), c({2, 8, 3}, 5);
  train_adam(a, x, y, o);
  train_adam(b, x, y, o);
  train_adam(c, x, y, o);
  EXPECT_EQ(a.layers()[0].weight, b.layers()[0].weight);
  EXPECT_EQ(a.layers()[1].bias, b.layers()[1].bias);
  EXPECT_NE(a.layers()[0].weight, c.layers()[0].weight);
}

TEST(GpuMemNetMlp, RefusesBadShapesAndLabels) {
  MlpClassifier net({2, 3}, 1);
  MlpGradients g;
  EXPECT_THROW(net.predict_proba(Eigen::MatrixXd::Zero(3, 1)), UserError);
  EXPECT_THROW(net.loss_and_gradient(Eigen::MatrixXd::Zero(2, 2), {0, 3}, 0, g), UserError);
  EXPECT_THROW(net.loss_and_gradient(Eigen::MatrixXd::Zero(2, 2), {0}, 0, g), UserError);
  EXPECT_THROW(MlpClassifier({2}, 1), UserError);
  DenseLayer a{Eigen::MatrixXd::Zero(4, 2), Eigen::VectorXd::Zero(4)};
  DenseLayer b{Eigen::MatrixXd::Zero(3, 5), Eigen::VectorXd::Zero(3)};
  EXPECT_THROW(MlpClassifier(std::vector<DenseLayer>{a, b}), UserError);
}

TEST(GpuMemNetMlp, JsonRoundTripIsExact) {
  MlpClassifier net({3, 4, 2}, 12);
  const auto back = MlpClassifier::from_json(nlohmann::json::parse(net.to_json().dump()), "t");
  ASSERT_EQ(back.sizes(), net.sizes());
  for (std::size_t l = 0; l < net.layers().size(); ++l) {
    EXPECT_EQ(back.layers()[l].weight, net.layers()[l].weight);
    EXPECT_EQ(back.layers()[l].bias, net.layers()[l].bias);
  }
  auto j = net.to_json();
  j["layers"][0]["weight"].erase(0);
  EXPECT_THROW(MlpClassifier::from_json(j, "t"), UserError);
}

}  // namespace
}  // namespace colo::estimate
