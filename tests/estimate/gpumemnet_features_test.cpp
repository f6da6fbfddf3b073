// GPUMemNet features: counts from a model graph, the dataset's activation definition, the
// angle encoding of activation functions, and the standardiser.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "core/error.h"
#include "estimate/gpumemnet/gpumemnet_features.h"

namespace colo::estimate {
namespace {

Layer layer(LayerKind k, std::vector<std::int64_t> shape, std::int64_t params, std::int64_t source = -1) {
  Layer l;
  l.kind = k;
  l.out_shape = std::move(shape);
  l.params = params;
  l.source_activations = source;
  return l;
}

TEST(GpuMemNetFeatures, CountsLayersAndActivationsOfACnnGraph) {
  ModelGraph g;
  g.activation = "GELU";
  g.layers = {layer(LayerKind::Conv, {16, 32, 32}, 448),  // H×W = 1024 (channels not counted)
              layer(LayerKind::BatchNorm, {16, 32, 32}, 32),
              layer(LayerKind::Activation, {16, 32, 32}, 0),
              layer(LayerKind::Dropout, {16, 32, 32}, 0),
              layer(LayerKind::Container, {16, 32, 32}, 0),  // composite: counted through its children
              layer(LayerKind::AdaptiveAvgPool, {16, 1, 1}, 0),
              layer(LayerKind::Linear, {10}, 170),
              layer(LayerKind::Softmax, {10}, 0, 0)};  // the source said 0: its own figure wins
  const auto in = gpumemnet_inputs(g, 64);
  EXPECT_EQ(in.conv, 1);
  EXPECT_EQ(in.linear, 1);
  EXPECT_EQ(in.batchnorm, 1);
  EXPECT_EQ(in.dropout, 1);
  EXPECT_EQ(in.depth, 2);
  EXPECT_EQ(in.batch, 64);
  EXPECT_EQ(in.params, 448 + 32 + 170);
  EXPECT_EQ(in.activations, 4 * 1024 + 1 + 10 + 0);
  EXPECT_EQ(in.activation, "gelu");
  EXPECT_THROW(gpumemnet_inputs(g, 0), UserError);
}

TEST(GpuMemNetFeatures, DominantActivationWhenTheParserNamedNone) {
  ModelGraph g;
  auto act = [](LayerKind k, const char* name) {
    Layer l = layer(k, {8}, 0);
    l.type_name = name;
    return l;
  };
  g.layers = {layer(LayerKind::Linear, {8}, 72), act(LayerKind::Activation, "GELU"), act(LayerKind::ReLU, "ReLU"),
              act(LayerKind::ReLU, "ReLU"), act(LayerKind::Softmax, "Softmax"), act(LayerKind::Softmax, "Softmax"),
              act(LayerKind::Softmax, "Softmax")};  // softmax is an output, not the activation function
  EXPECT_EQ(dominant_activation(g), "relu");
  EXPECT_EQ(gpumemnet_inputs(g, 1).activation, "relu");
  g.activation = "tanh";  // what the parser said wins
  EXPECT_EQ(gpumemnet_inputs(g, 1).activation, "tanh");
  g.layers.resize(1);
  EXPECT_EQ(dominant_activation(g), "identity");
}

TEST(GpuMemNetFeatures, VectorHoldsLogMagnitudesAndTheActivationAngle) {
  GpuMemNetInputs in;
  in.linear = 3;
  in.batch = 99;
  in.params = 1000;
  in.activations = 50;
  in.activation = "relu";
  const auto f = gpumemnet_features(in);
  ASSERT_EQ(f.size(), kGpuMemNetFeatureCount);
  EXPECT_EQ(f(0), 3);
  EXPECT_DOUBLE_EQ(f(5), std::log(100.0));
  EXPECT_DOUBLE_EQ(f(6), std::log1p(1000.0));
  EXPECT_DOUBLE_EQ(f(8), std::log1p(50.0 * 99));
  EXPECT_DOUBLE_EQ(f(9), 1.0);  // relu is function 0: θ = 0
  EXPECT_DOUBLE_EQ(f(10), 0.0);
}

TEST(GpuMemNetFeatures, ActivationNamesAreCanonicalisedAndUnknownOnesRefused) {
  EXPECT_EQ(canonical_activation("LeakyReLU"), "leakyrelu");
  EXPECT_EQ(canonical_activation("leaky_relu"), "leakyrelu");
  EXPECT_EQ(canonical_activation("swish"), "silu");
  EXPECT_EQ(canonical_activation("None"), "identity");
  EXPECT_EQ(canonical_activation(""), "identity");
  EXPECT_EQ(canonical_activation("NewGELUActivation"), "gelu");
  EXPECT_EQ(canonical_activation("Hardswish"), "silu");
  EXPECT_THROW(canonical_activation("hardshrink"), UserError);
  // Angles are evenly spread and distinct, so cos/sin place every function on the unit circle.
  const double step = 2 * std::numbers::pi / static_cast<double>(known_activations().size());
  EXPECT_DOUBLE_EQ(activation_angle("leakyrelu"), step);
  EXPECT_NE(activation_angle("gelu"), activation_angle("silu"));
}

TEST(GpuMemNetFeatures, StandardiserCentresScalesAndKeepsConstantFeatures) {
  Eigen::MatrixXd x(2, 4);
  x << 1, 2, 3, 4,  //
      7, 7, 7, 7;
  const auto s = Standardizer::fit(x);
  const Eigen::MatrixXd z = s.apply(x);
  EXPECT_NEAR(z.row(0).mean(), 0, 1e-12);
  EXPECT_NEAR(z.row(0).squaredNorm() / 4, 1, 1e-12);
  EXPECT_EQ(s.scale(1), 1.0);  // constant: not divided by zero
  EXPECT_EQ(z.row(1), Eigen::RowVectorXd::Zero(4));
  EXPECT_THROW(s.apply(Eigen::MatrixXd::Zero(3, 1)), UserError);
}

}  // namespace
}  // namespace colo::estimate
