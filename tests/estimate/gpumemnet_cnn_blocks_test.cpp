// The GPUMemNet CNN generator's block structure: residual sums and dense concatenations the rows
// do not list, rebuilt with channels checked against parameter counts; and how the training trace
// keeps the tensors those layers read alive.
#include <gtest/gtest.h>

#include <algorithm>

#include "estimate/allocator/allocsim.h"
#include "estimate/graph/gpumemnet_cnn_blocks.h"
#include "estimate/graph/parsers.h"
#include "estimate/allocator/training_trace.h"

namespace colo::estimate {
namespace {

std::tuple<std::int64_t, std::int64_t, std::int64_t> conv_of(const Layer& l) {
  return {l.in_features, l.kernel, l.out_features};
}

TEST(GpuMemNetCnnBlocks, ResidualBlocksGetTheirSumAndReadTheBlockInput) {
  // Two blocks as cnn.py builds them: 3->56 at 64x64, then 56->77 with stride 2 (32x32).
  // Params: 1x1 shortcut (3+1)*56 = 224, conv1 (3*9+1)*56 = 1568, conv2 (56*9+1)*56 = 28280;
  // (56+1)*77 = 4389, (56*9+1)*77 = 38885, (77*9+1)*77 = 53438; linear (77+1)*136 = 10608.
  const auto g = parse_gpumemnet_row(
      "input_channels:3_num_classes:136_depth:4_arch:residual_base_filters:56_batch:8_input_size:64_act:elu_"
      "dropout:0.1_dropout:False_batchnorm:False.out",
      "[('conv2d', 4096, 224), ('Identity', 4096, 0), ('conv2d', 4096, 1568), ('ELU', 4096, 0), "
      "('conv2d', 4096, 28280), ('ELU', 4096, 0), ('conv2d', 1024, 4389), ('Identity', 1024, 0), "
      "('conv2d', 1024, 38885), ('ELU', 1024, 0), ('conv2d', 1024, 53438), ('ELU', 1024, 0), "
      "('adaptive_avg_pool2d', 1, 0), ('linear', 136, 10608), ('Softmax', 0, 0)]",
      GpuMemNetKind::CNN, "cnn.csv:2");
  ASSERT_EQ(g.layers.size(), 17u);  // 15 listed + 2 sums
  EXPECT_EQ(g.layers[6].kind, LayerKind::Add);
  EXPECT_EQ(g.layers[6].extra_inputs, std::vector<int>{1});  // the shortcut's output (Identity after the 1x1 conv)
  EXPECT_EQ(g.layers[6].out_shape, (std::vector<std::int64_t>{56, 4096}));
  EXPECT_EQ(g.layers[6].source_activations, 0);  // not in the row: GPUMemNet features must not see it
  EXPECT_EQ(g.layers[13].kind, LayerKind::Add);
  EXPECT_EQ(g.layers[13].extra_inputs, std::vector<int>{8});
  EXPECT_EQ(conv_of(g.layers[0]), std::tuple(std::int64_t{3}, std::int64_t{1}, std::int64_t{56}));
  EXPECT_EQ(conv_of(g.layers[2]), std::tuple(std::int64_t{3}, std::int64_t{3}, std::int64_t{56}));
  EXPECT_EQ(conv_of(g.layers[9]), std::tuple(std::int64_t{56}, std::int64_t{3}, std::int64_t{77}));
  EXPECT_EQ(conv_of(g.layers[11]), std::tuple(std::int64_t{77}, std::int64_t{3}, std::int64_t{77}));
  // conv1 reads the block input: the model input, then the first block's sum (56 x 4096), strided.
  EXPECT_EQ(g.layers[2].input_from, Layer::kInputTensor);
  EXPECT_EQ(g.layers[9].input_from, 6);
  EXPECT_EQ(g.layers[9].input_elems, 56 * 4096);
  EXPECT_TRUE(g.layers[9].strided);
  EXPECT_TRUE(g.layers[7].strided);  // the 1x1 shortcut of the second block
  EXPECT_EQ(g.layers[14].input_elems, 77 * 1024);  // the pool reads the second sum
  EXPECT_EQ(g.total_params(), 224 + 1568 + 28280 + 4389 + 38885 + 53438 + 10608);
}

TEST(GpuMemNetCnnBlocks, DenseBlocksReadConcatenationsAndTransitionsHalveTheWidth) {
  // cnn.csv: depth 8 -> two DenseBlocks of four 3x3 convs with growth 32, a 1x1 transition
  // (129 -> 64, ReLU) and AvgPool2d ('d') between them. The generic recovery alone read the
  // 9536-param conv as 1 -> 4768 channels.
  const auto g = parse_gpumemnet_row(
      "input_channels:1_num_classes:639_depth:8_arch:dense_base_filters:20_batch:32_input_size:10_act:gelu_"
      "dropout:0.2_dropout:False_batchnorm:False.out",
      "[('conv2d', 100, 320), ('GELU', 100, 0), ('conv2d', 100, 9536), ('GELU', 100, 0), ('conv2d', 100, 18752), "
      "('GELU', 100, 0), ('conv2d', 100, 27968), ('GELU', 100, 0), ('conv2d', 100, 8320), ('ReLU', 100, 0), "
      "('d', 25, 0), ('conv2d', 25, 18464), ('GELU', 25, 0), ('conv2d', 25, 27680), ('GELU', 25, 0), "
      "('conv2d', 25, 36896), ('GELU', 25, 0), ('conv2d', 25, 46112), ('GELU', 25, 0), "
      "('adaptive_avg_pool2d', 1, 0), ('linear', 639, 123327), ('Softmax', 0, 0)]",
      GpuMemNetKind::CNN, "cnn.csv:1019");
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> convs;
  std::vector<std::int64_t> cat_widths;
  for (const auto& l : g.layers) {
    if (l.kind == LayerKind::Conv) convs.push_back(conv_of(l));
    if (l.kind == LayerKind::Concat) cat_widths.push_back(l.out_shape.front());
  }
  using T = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
  EXPECT_EQ(convs, (std::vector<T>{{1, 3, 32}, {33, 3, 32}, {65, 3, 32}, {97, 3, 32}, {129, 1, 64},
                                   {64, 3, 32}, {96, 3, 32}, {128, 3, 32}, {160, 3, 32}}));
  // Before every dense conv (torch.cat even of one tensor) and at each block's end.
  EXPECT_EQ(cat_widths, (std::vector<std::int64_t>{1, 33, 65, 97, 129, 64, 96, 128, 160, 192}));
  const Layer& last_cat = g.layers[g.layers.size() - 4];
  ASSERT_EQ(last_cat.kind, LayerKind::Concat);
  EXPECT_EQ(last_cat.extra_inputs.size(), 4u);  // the block input and three earlier features
  EXPECT_EQ(g.layers[g.layers.size() - 3].input_elems, 192 * 25);  // the pool reads the block's concatenation
}

TEST(GpuMemNetCnnBlocks, RowsOffTheStructureAreLeftToTheGenericRecovery) {
  std::vector<GpuMemNetTuple> t = {{"conv2d", 64, 28 * 8}, {"ReLU", 64, 0}, {"adaptive_avg_pool2d", 1, 0},
                                   {"linear", 10, 90}, {"Softmax", 0, 0}};
  EXPECT_TRUE(rebuild_gpumemnet_cnn("uniform", t, 3, 64).has_value());
  EXPECT_FALSE(rebuild_gpumemnet_cnn("uniform", {t[0], t[2], t[3], t[4]}, 3, 64).has_value());  // no activation
  EXPECT_FALSE(rebuild_gpumemnet_cnn("uniform", {t[0], t[1], t[2], t[3]}, 3, 64).has_value());  // no softmax
  EXPECT_FALSE(rebuild_gpumemnet_cnn("residual", t, 3, 64).has_value());  // a block needs two convs
  EXPECT_FALSE(rebuild_gpumemnet_cnn("dense", t, 3, 64).has_value());  // a block needs four
  EXPECT_FALSE(rebuild_gpumemnet_cnn("spiral", t, 3, 64).has_value());
  t[0].params = 28 * 8 + 1;  // no (cin*9+1)*cout factorisation with cin = 3
  EXPECT_FALSE(rebuild_gpumemnet_cnn("uniform", t, 3, 64).has_value());
}

// Input 16 floats -> GELU (keeps its input) -> ReLU (keeps its output) -> `joint` reading the
// ReLU's output and, when `extra`, the GELU's output too.
ModelGraph two_branches(LayerKind joint, bool extra) {
  ModelGraph g;
  g.input_shape = {16};
  Layer gelu;
  gelu.kind = LayerKind::Activation;
  gelu.type_name = "GELU";
  gelu.out_shape = {16};
  Layer relu = gelu;
  relu.kind = LayerKind::ReLU;
  relu.type_name = "ReLU";
  Layer j;
  j.kind = joint;
  j.out_shape = {joint == LayerKind::Concat ? 32 : 16};
  if (extra) j.extra_inputs = {0};
  g.layers = {gelu, relu, j};
  g.finalize();
  return g;
}

// Position of the first event matching (op, id) in the trace.
std::ptrdiff_t at(const std::vector<AllocEvent>& tr, AllocEvent::Op op, std::uint32_t id) {
  const auto it = std::find_if(tr.begin(), tr.end(), [&](const AllocEvent& e) { return e.op == op && e.id == id; });
  return it == tr.end() ? -1 : it - tr.begin();
}

TEST(TrainingTrace, SumsAndConcatenationsKeepTheirOtherInputsAliveAndAllocateTheirOutput) {
  // Tensor ids: 0 input, 1 labels, 2 GELU output, 3 ReLU output, 4 the joint's output.
  for (LayerKind k : {LayerKind::Add, LayerKind::Concat}) {
    TraceOptions o;
    o.batch = 2;
    o.iterations = 1;
    const auto with = synthesize_training_trace(two_branches(k, true), o);
    ASSERT_GE(at(with, AllocEvent::Op::Malloc, 4), 0);
    EXPECT_EQ(with[static_cast<std::size_t>(at(with, AllocEvent::Op::Malloc, 4))].bytes, 2u * (k == LayerKind::Concat ? 32 : 16) * 4);
    // Nothing saved the GELU's output for backward (ReLU keeps its own output): only the joint
    // holds it, so it is freed right after the joint has run, not before.
    EXPECT_GT(at(with, AllocEvent::Op::Free, 2), at(with, AllocEvent::Op::Malloc, 4));
    EXPECT_LT(at(with, AllocEvent::Op::Free, 2), at(with, AllocEvent::Op::Malloc, 5));  // before the loss
    const auto without = synthesize_training_trace(two_branches(k, false), o);
    EXPECT_LT(at(without, AllocEvent::Op::Free, 2), at(without, AllocEvent::Op::Malloc, 4));
    EXPECT_EQ(replay(with).events, with.size());  // every free names a live allocation
  }
}

// Input 8 -> stem Linear(8,16) -> [shortcut Linear(16,32) | main Linear(16,32) reading the stem, ReLU]
// -> Add(main, shortcut): a residual block whose shortcut has its own op.
ModelGraph residual_block() {
  ModelGraph g;
  g.input_shape = {8};
  auto linear = [](std::int64_t in, std::int64_t out) {
    Layer l;
    l.kind = LayerKind::Linear;
    l.type_name = "Linear";
    l.in_features = in;
    l.out_features = out;
    l.params = in * out + out;
    l.out_shape = {out};
    return l;
  };
  Layer main = linear(16, 32);
  main.input_from = 0;
  Layer relu;
  relu.kind = LayerKind::ReLU;
  relu.type_name = "ReLU";
  relu.out_shape = {32};
  Layer add;
  add.kind = LayerKind::Add;
  add.out_shape = {32};
  add.extra_inputs = {1};
  g.layers = {linear(8, 16), linear(16, 32), main, relu, add};
  g.finalize();
  return g;
}

TEST(TrainingTrace, ShortcutGradientStaysAliveUntilTheShortcutBranchRunsBackward) {
  // Batch 3: a 32-wide gradient is 384 B, a 16-wide one 192 B (no parameter has either size).
  TraceOptions o;
  o.batch = 3;
  o.iterations = 1;
  const auto tr = synthesize_training_trace(residual_block(), o);
  const auto loss = std::find_if(tr.begin(), tr.end(), [](const AllocEvent& e) { return e.op == AllocEvent::Op::Malloc && e.bytes == 4; });
  ASSERT_NE(loss, tr.end());
  std::vector<std::uint32_t> g32, g16;  // gradients allocated in backward, in order
  for (auto it = loss; it != tr.end(); ++it) {
    if (it->op != AllocEvent::Op::Malloc) continue;
    if (it->bytes == 384) g32.push_back(it->id);
    if (it->bytes == 192) g16.push_back(it->id);
  }
  // d(loss)/d(sum), the ReLU's input gradient; the main branch's and the shortcut's gradients of
  // the stem output (the stem reads the batch: no gradient of its own input).
  ASSERT_EQ(g32.size(), 2u);
  ASSERT_EQ(g16.size(), 2u);
  const std::uint32_t sum_grad = g32[0], main_in = g16[0], shortcut_in = g16[1];
  // The sum's gradient is not freed when the main branch has consumed it: the shortcut still
  // needs it, so it outlives the main branch and dies only once the shortcut ran backward.
  EXPECT_GT(at(tr, AllocEvent::Op::Free, sum_grad), at(tr, AllocEvent::Op::Malloc, main_in));
  EXPECT_GT(at(tr, AllocEvent::Op::Free, sum_grad), at(tr, AllocEvent::Op::Malloc, shortcut_in));
  // The shortcut's gradient of the stem output is summed into the main branch's (in place): it
  // is freed first, and the main branch's flows on into the stem's backward.
  EXPECT_LT(at(tr, AllocEvent::Op::Free, shortcut_in), at(tr, AllocEvent::Op::Free, main_in));
  EXPECT_EQ(replay(tr).events, tr.size());
}

TEST(ModelGraph, LeakyReluKeepsItsInputForBackward) {
  // leaky_relu_backward(grad, self, ...) needs the input; only relu/threshold keeps the output.
  EXPECT_EQ(classify_layer_type("LeakyReLU"), LayerKind::Activation);
  EXPECT_EQ(classify_layer_type("ReLU"), LayerKind::ReLU);
  ModelGraph g;
  g.input_shape = {8};
  Layer l;
  l.kind = classify_layer_type("LeakyReLU");
  l.out_shape = {8};
  g.layers = {l};
  g.finalize();
  ASSERT_EQ(g.layers[0].saved.size(), 1u);
  EXPECT_EQ(g.layers[0].saved[0].what, SavedTensor::What::Input);
}

}  // namespace
}  // namespace colo::estimate
