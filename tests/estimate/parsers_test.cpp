// Parsers: real summaries from data, a Keras fixture, and malformed inputs that must
// fail with a one-line "SOURCE:LINE: problem".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "estimate/graph/parsers.h"

namespace colo::estimate {
namespace {

const std::string kSummaries = std::string(COLO_SOURCE_DIR) + "/data/carma/summaries/";

std::string read_summary(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Expects a UserError whose message starts with `prefix` and is one line.
template <typename F>
void expect_error(F&& f, const std::string& prefix) {
  try {
    f();
    FAIL() << "no error, expected one starting with " << prefix;
  } catch (const UserError& e) {
    const std::string msg = e.what();
    EXPECT_THAT(msg, ::testing::StartsWith(prefix));
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(TorchSummary, ParsesMnistWithBatchMinusOne) {
  const auto g = parse_torchsummary(read_summary(kSummaries + "mnist_cnn_64.model"), "mnist");
  ASSERT_EQ(g.layers.size(), 6u);
  EXPECT_EQ(g.layers[0].kind, LayerKind::Conv);
  EXPECT_EQ(g.layers[0].out_shape, (std::vector<std::int64_t>{32, 26, 26}));
  EXPECT_EQ(g.layers[3].kind, LayerKind::Linear);
  EXPECT_EQ(g.layers[3].params, 1179776);
  EXPECT_EQ(g.total_params(), 1199882);
  EXPECT_EQ(g.declared_total_params, 1199882);
  // Dropout keeps a one-byte mask per element of its output.
  ASSERT_EQ(g.layers[2].saved.size(), 1u);
  EXPECT_EQ(g.layers[2].saved[0].what, SavedTensor::What::Mask);
  EXPECT_EQ(g.layers[2].saved[0].per_sample_bytes, 64 * 12 * 12);
}

TEST(TorchSummary, ParsesResNet50AndKeepsContainers) {
  const auto g = parse_torchsummary(read_summary(kSummaries + "resnet50_32.model"), "resnet50_32");
  EXPECT_EQ(g.layers.size(), 174u);
  EXPECT_EQ(g.total_params(), 25557032);
  EXPECT_EQ(g.count(LayerKind::Container), 16);  // Bottleneck rows
  EXPECT_TRUE(g.unknown_types().empty());
  // 3x224x224 = 150528 from "Input size (MB): 18.38" (two decimals: within 0.1 %).
  ASSERT_EQ(g.input_shape.size(), 1u);
  EXPECT_NEAR(static_cast<double>(g.input_shape[0]), 150528.0, 150.0);
  // ReLU keeps its output, batch norm its input plus per-channel statistics.
  EXPECT_EQ(g.layers[2].saved[0].what, SavedTensor::What::Output);
  EXPECT_EQ(g.layers[1].saved[0].what, SavedTensor::What::Input);
  EXPECT_EQ(g.layers[1].saved[1].fixed_bytes, 2 * 64 * 4);
  // Max pool keeps its input and int64 indices.
  EXPECT_EQ(g.layers[3].saved[1].what, SavedTensor::What::Indices);
  EXPECT_EQ(g.layers[3].saved[1].per_sample_bytes, 64 * 56 * 56 * 8);
}

TEST(TorchSummary, EveryCarmaTableParsesWithoutUnknownTypes) {
  for (const char* f : {"Inception_32", "Xception_32", "efficientnet_32", "efficientNet_cifar100", "mobilenet_32",
                        "resnet18_cifar100", "resnet34_cifar100", "vgg_32"}) {
    const auto g = load_summary(kSummaries + f + ".model");
    EXPECT_EQ(g.source_format, "torchsummary") << f;
    EXPECT_TRUE(g.unknown_types().empty()) << f << ": " << ::testing::PrintToString(g.unknown_types());
    EXPECT_EQ(g.total_params(), g.declared_total_params) << f;
  }
}

TEST(TorchSummary, UnknownTypesAreKeptAndReported) {
  const std::string t =
      "----\n        Layer (type)               Output Shape         Param #\n"
      "================================================================\n"
      "            Conv2d-1           [-1, 8, 4, 4]              80\n"
      "        FancyOp-2           [-1, 8, 4, 4]               0\n"
      "================================================================\n";
  const auto g = parse_torchsummary(t, "x.model");
  ASSERT_EQ(g.layers.size(), 2u);
  EXPECT_EQ(g.layers[1].kind, LayerKind::Unknown);
  EXPECT_EQ(g.unknown_types(), std::vector<std::string>{"FancyOp"});
}

// A type name with non-ASCII or control bytes is not the known layer its name starts with: in a
// torchsummary table it is an error, and no parser's type is classified as the known layer.
TEST(TorchSummary, CorruptedTypeNamesAreErrorsNotTheKnownLayer) {
  const std::string head =
      "----\n        Layer (type)               Output Shape         Param #\n"
      "================================================================\n"
      "            Conv2d-1           [-1, 8, 4, 4]              80\n";
  expect_error([&] { parse_torchsummary(head + "            Conv\xff\xfe" "2d-2     [-1, 8, 4, 4]    80\n", "x.model"); },
               "x.model:5: layer type 'Conv\\xff\\xfe2d' is not a class name");
  expect_error([&] { parse_torchsummary(head + "            Conv2d\x01-2     [-1, 8, 4, 4]    80\n", "y.model"); },
               "y.model:5: layer type 'Conv2d\\x01' is not a class name");
  EXPECT_EQ(classify_layer_type("Conv\xff\xfe" "2d"), LayerKind::Unknown);
  EXPECT_EQ(classify_layer_type("Conv2d\x01"), LayerKind::Unknown);
  EXPECT_EQ(classify_layer_type("Conv2d\n"), LayerKind::Unknown);
  EXPECT_EQ(classify_layer_type("Conv2d"), LayerKind::Conv);
}

// torchsummary's total is the sum of its rows (true of every carma table): a deleted or edited
// row shows as a mismatch; a second table in the same file is not silently ignored.
TEST(TorchSummary, TotalParamsMustMatchTheRowsAndOneTablePerFile) {
  const std::string table =
      "----\n        Layer (type)               Output Shape         Param #\n"
      "================================================================\n"
      "            Conv2d-1           [-1, 8, 4, 4]              80\n"
      "              ReLU-2           [-1, 8, 4, 4]               0\n"
      "================================================================\n";
  EXPECT_EQ(parse_torchsummary(table + "Total params: 80\n", "ok.model").declared_total_params, 80);
  expect_error([&] { parse_torchsummary(table + "Total params: 5\n", "x.model"); },
               "x.model:7: Total params 5 is not the sum of the table's rows (80)");
  expect_error([&] { parse_torchsummary(table + "Total params: 80\n" + table, "y.model"); },
               "y.model:9: a second torchsummary table");
}

TEST(TorchSummary, MalformedInputFailsWithFileAndLine) {
  const std::string head =
      "----------------------------------------------------------------\n"
      "        Layer (type)               Output Shape         Param #\n"
      "================================================================\n";
  expect_error([] { parse_torchsummary("hello\n", "a.model"); }, "a.model:1: not a torchsummary table");
  expect_error([&] { parse_torchsummary(head + "  Conv2d-1  [-1, 8, x]  80\n====================\n", "b.model"); },
               "b.model:4: bad output shape");
  expect_error([&] { parse_torchsummary(head + "  Conv2d-1  [-1, 8, 4]  8O\n====================\n", "c.model"); },
               "c.model:4: bad parameter count");
  expect_error([&] { parse_torchsummary(head + "  Conv2d  [-1, 8, 4]  80\n====================\n", "d.model"); },
               "d.model:4: layer name 'Conv2d' is not TYPE-INDEX");
  expect_error([&] { parse_torchsummary(head + "  Conv2d-1  [-1, 8, 4]  80\n", "e.model"); },
               "e.model:4: table not closed");
  expect_error([&] { parse_torchsummary(head + "  Conv2d-1  8, 4  80\n", "f.model"); },
               "f.model:4: layer row without a [shape]");
  expect_error([&] { parse_torchsummary(head + "  Conv2d-1  [-1, 8, 4]  99999999999999999999999\n", "g.model"); },
               "g.model:4: parameter count out of range");
  expect_error([&] { parse_torchsummary(head + "  Conv2d-1  [-1, 0, 4]  80\n====================\n", "h.model"); },
               "h.model:4: dimension out of range");
}

TEST(ModuleRepr, ParsesBertWithSdpaAttentionAndTiedDecoder) {
  const auto g = load_summary(kSummaries + "BERT_base.model", 512);
  EXPECT_EQ(g.source_format, "module-repr");
  EXPECT_EQ(g.family, ModelFamily::Transformer);
  EXPECT_EQ(g.seq_len, 512);
  EXPECT_EQ(g.hidden, 768);
  EXPECT_EQ(g.count(LayerKind::Attention), 12);  // one per layer, not also the enclosing BertAttention
  // The MLM decoder (768 -> 28996) is tied to the word embeddings: only its bias is its own.
  const auto& dec = g.layers.back();
  EXPECT_EQ(dec.kind, LayerKind::Linear);
  EXPECT_EQ(dec.params, 28996);
  EXPECT_EQ(dec.out_shape, (std::vector<std::int64_t>{512, 28996}));
  // The repr's total counts the tied decoder weight and the shared bias twice; unique: 108,340,804.
  EXPECT_EQ(g.total_params(), 130638728 - 28996 * 768 - 28996);
  EXPECT_TRUE(g.unknown_types().empty()) << ::testing::PrintToString(g.unknown_types());
}

TEST(ModuleRepr, Gpt2Conv1DWidthsAndXlnetMaterialisedAttention) {
  const auto gpt = load_summary(kSummaries + "gpt2_large.model", 512);
  EXPECT_EQ(gpt.hidden, 1280);
  bool saw_qkv = false;
  for (const auto& l : gpt.layers)
    if (l.type_name == "Conv1D" && l.out_features == 3 * 1280) saw_qkv = true;
  EXPECT_TRUE(saw_qkv);
  const auto xl = load_summary(kSummaries + "xlnet_base_cased.model", 512);
  int materialised = 0;
  for (const auto& l : xl.layers) materialised += l.kind == LayerKind::Attention && l.attn_materialized;
  EXPECT_EQ(materialised, 12);
}

TEST(ModuleRepr, MalformedInputFailsWithFileAndLine) {
  expect_error([] { parse_module_repr("Net(\n  (fc): Linear(in_features=4, out_features=2, bias=True), 10 params\n", "n.txt", 8); },
               "n.txt:2: module 'Net' is never closed");
  expect_error([] { parse_module_repr("Net(\n  what is this\n), 0 params\n", "m.txt", 8); },
               "m.txt:2: unrecognised line");
  expect_error([] { parse_module_repr("Net(\n  (fc): Linear(4, 2), 10 params\n), 10 params\n", "l.txt", 8); },
               "l.txt:2: Linear without in_features");
  expect_error([] { parse_module_repr("  ), 3 params\n", "k.txt", 8); }, "k.txt:1: ')' without an open module");
  expect_error([] { parse_module_repr("Net(\n  (e): Embedding(99999999999999999999, 4), 1 params\n), 1 params\n", "j.txt", 8); },
               "j.txt:2: Embedding num_embeddings: 99999999999999999999 is out of range");
}

// A constructor argument that is not the integer it should be is a FILE:LINE error, never read
// as its leading digits ("1e400" as 1) or skipped.
TEST(ModuleRepr, ConstructorArgumentsAreParsedStrictly) {
  std::string bert = read_summary(kSummaries + "BERT_base.model");
  const std::string good = "Embedding(28996, 768, padding_idx=0)";
  const auto pos = bert.find(good);
  ASSERT_NE(pos, std::string::npos);
  const auto line = std::count(bert.begin(), bert.begin() + static_cast<std::ptrdiff_t>(pos), '\n') + 1;
  const std::string where = "BERT_base.model:" + std::to_string(line) + ": ";
  auto with = [&](const std::string& replacement) {
    std::string t = bert;
    t.replace(pos, good.size(), replacement);
    return t;
  };
  expect_error([&] { parse_module_repr(with("Embedding(28996, 1e400, padding_idx=0)"), "BERT_base.model", 512); },
               where + "Embedding embedding_dim: '1e400' is not an integer");
  expect_error([&] { parse_module_repr(with("Embedding(28996, 768.5, padding_idx=0)"), "BERT_base.model", 512); },
               where + "Embedding embedding_dim: '768.5' is not an integer");
  expect_error([&] { parse_module_repr(with("Embedding(28996x, 768, padding_idx=0)"), "BERT_base.model", 512); },
               where + "Embedding num_embeddings: '28996x' is not an integer");
  expect_error([&] { parse_module_repr(with("Embedding(28996, 768, padding_idx=nan)"), "BERT_base.model", 512); },
               where + "Embedding padding_idx: 'nan' is not an integer");
  expect_error([] { parse_module_repr("Net(\n  (fc): Linear(in_features=4e2, out_features=2, bias=True), 10 params\n)\n", "l.txt", 8); },
               "l.txt:2: Linear in_features: '4e2' is not an integer");
  expect_error([] { parse_module_repr("Net(\n  (n): LayerNorm((1e400,), eps=1e-12, elementwise_affine=True), 10 params\n)\n", "n.txt", 8); },
               "n.txt:2: LayerNorm normalized_shape: '1e400' is not an integer");
  expect_error([] { parse_module_repr("Net(\n  (d): Dropout(p=inf, inplace=False), 0 params\n)\n", "d.txt", 8); },
               "d.txt:2: Dropout p: 'inf' is not a number");
}

TEST(Keras, ParsesSummaryWithWrappedTypeNames) {
  const auto g = load_summary(std::string(COLO_SOURCE_DIR) + "/tests/estimate/data/keras_mnist_cnn.txt");
  EXPECT_EQ(g.source_format, "keras");
  ASSERT_EQ(g.layers.size(), 8u);
  EXPECT_EQ(g.layers[0].kind, LayerKind::Conv);
  EXPECT_EQ(g.layers[0].out_shape, (std::vector<std::int64_t>{32, 26, 26}));  // channels first
  EXPECT_EQ(g.layers[2].kind, LayerKind::MaxPool);
  EXPECT_EQ(g.layers[2].type_name, "MaxPooling2D");
  EXPECT_EQ(g.layers[4].kind, LayerKind::Flatten);
  EXPECT_EQ(g.layers[5].kind, LayerKind::Linear);
  EXPECT_EQ(g.total_params(), 1199882);
  EXPECT_EQ(g.declared_total_params, 1199882);
}

TEST(Keras, MalformedInputFailsWithFileAndLine) {
  const std::string head = " Layer (type)                Output Shape              Param #\n"
                           "=================================================================\n";
  expect_error([&] { parse_keras(head + " dense (Dense)   (None, x)   10\n=====================\n", "k.txt"); },
               "k.txt:3: bad output shape");
  expect_error([&] { parse_keras(head + " dense (Dense)   (None, 4)   ten\n=====================\n", "k.txt"); },
               "k.txt:3: bad parameter count");
  expect_error([&] { parse_keras(head + " dense Dense   None, 4   10\n", "k.txt"); }, "k.txt:3: layer row without");
  expect_error([&] { parse_keras(head + " dense (Dense)   (None, 4)   10\n", "k.txt"); }, "k.txt:3: table not closed");
}

TEST(GpuMemNetRow, MlpWidthsFromParams) {
  const auto g = parse_gpumemnet_row(
      "input:100_output:10_depth:2_arch:uniform_batch:64_act:relu_dropout:0.2_dropout:True_batchnorm:True.out",
      "[('linear', 50, 5050), ('batch_normalization', 50, 100), ('ReLU', 50, 0), ('dropout', 50, 0), "
      "('linear', 10, 510), ('Softmax', 10, 0)]",
      GpuMemNetKind::MLP, "mlp.csv:2");
  ASSERT_EQ(g.layers.size(), 6u);
  EXPECT_EQ(g.layers[0].in_features, 100);
  EXPECT_EQ(g.layers[4].in_features, 50);
  EXPECT_EQ(g.layers[1].kind, LayerKind::BatchNorm);
  EXPECT_EQ(g.input_shape, std::vector<std::int64_t>{100});
  EXPECT_EQ(g.activation, "relu");
  EXPECT_EQ(g.layers[0].source_activations, 50);
}

TEST(GpuMemNetRow, CnnChannelsAndKernelsRecoveredFromParams) {
  // A residual stage from cnn.csv: 1x1 shortcut (3->56), 3x3 main convs reading the block input.
  const auto g = parse_gpumemnet_row(
      "input_channels:3_num_classes:136_depth:11_arch:residual_base_filters:56_batch:58_input_size:64_act:elu_"
      "dropout:0.1_dropout:True_batchnorm:False.out",
      "[('conv2d', 4096, 224), ('Identity', 4096, 0), ('conv2d', 4096, 1568), ('ELU', 4096, 0), "
      "('conv2d', 4096, 28280), ('ELU', 4096, 0), ('conv2d', 1024, 4389), ('Identity', 1024, 0), "
      "('conv2d', 1024, 38885), ('ELU', 1024, 0), ('adaptive_avg_pool2d', 1, 0), ('linear', 136, 10608), "
      "('Softmax', 0, 0)]",
      GpuMemNetKind::CNN, "cnn.csv:9");
  auto conv = [&](std::size_t i) { return std::tuple(g.layers[i].in_features, g.layers[i].kernel, g.layers[i].out_features); };
  EXPECT_EQ(conv(0), std::tuple(std::int64_t{3}, std::int64_t{1}, std::int64_t{56}));
  EXPECT_EQ(conv(2), std::tuple(std::int64_t{3}, std::int64_t{3}, std::int64_t{56}));
  EXPECT_EQ(conv(4), std::tuple(std::int64_t{56}, std::int64_t{3}, std::int64_t{56}));
  EXPECT_EQ(conv(6), std::tuple(std::int64_t{56}, std::int64_t{1}, std::int64_t{77}));
  EXPECT_EQ(conv(8), std::tuple(std::int64_t{56}, std::int64_t{3}, std::int64_t{77}));
  EXPECT_EQ(g.layers[4].out_shape, (std::vector<std::int64_t>{56, 4096}));
  EXPECT_EQ(g.layers[11].in_features, 77);
  // The main convs read the block input, not the shortcut's output: the model input for the first
  // block, the ELU before the shortcut (56 x 4096) for the second, whose two 56->77 convs halve
  // the resolution (strided).
  EXPECT_EQ(g.layers[2].input_from, Layer::kInputTensor);
  EXPECT_EQ(g.layers[2].input_elems, 3 * 4096);
  EXPECT_EQ(g.layers[4].input_from, Layer::kPreviousTensor);
  EXPECT_EQ(g.layers[8].input_from, 5);
  EXPECT_EQ(g.layers[8].input_elems, 56 * 4096);
  EXPECT_FALSE(g.layers[2].strided);
  EXPECT_FALSE(g.layers[4].strided);
  EXPECT_TRUE(g.layers[6].strided);
  EXPECT_TRUE(g.layers[8].strided);
}

TEST(GpuMemNetRow, MalformedRowsFailWithLocation) {
  const std::string fn = "input:10_output:2_depth:1_arch:uniform_batch:4_act:relu_dropout:0.1_dropout:False_batchnorm:False.out";
  expect_error([&] { parse_gpumemnet_row(fn, "('linear', 2, 22)", GpuMemNetKind::MLP, "mlp.csv:7"); },
               "mlp.csv:7: Activations-Params is not a [...] list");
  expect_error([&] { parse_gpumemnet_row(fn, "[('linear', 2)]", GpuMemNetKind::MLP, "mlp.csv:8"); },
               "mlp.csv:8: Activations-Params: tuple 1 needs 3 fields");
  expect_error([&] { parse_gpumemnet_row(fn, "[('linear', 3, 22)]", GpuMemNetKind::MLP, "mlp.csv:9"); },
               "mlp.csv:9: layer 1 (linear): params 22 not a multiple");
  expect_error([&] { parse_gpumemnet_row("depth:1_arch:x.out", "[('linear', 2, 22)]", GpuMemNetKind::MLP, "mlp.csv:10"); },
               "mlp.csv:10: filename has no 'input:' field");
  expect_error([&] { parse_gpumemnet_row("weird:1.out", "[('linear', 2, 22)]", GpuMemNetKind::MLP, "mlp.csv:11"); },
               "mlp.csv:11: filename: unknown field");
  expect_error(
      [&] {
        parse_gpumemnet_row("input_channels:3_input_size:8_base_filters:4.out", "[('conv2d', 64, 7)]", GpuMemNetKind::CNN,
                            "cnn.csv:12");
      },
      "cnn.csv:12: layer 1 (conv2d): cannot recover channels");
  // Shapes whose products would overflow (the fuzzer's input_size^2) or that are empty.
  expect_error([&] { parse_gpumemnet_row("input_channels:3_input_size:6264637474634.out", "[('conv2d', 64, 7)]",
                                         GpuMemNetKind::CNN, "cnn.csv:13"); },
               "cnn.csv:13: filename field 'input_size:6264637474634' must be in [1, 65536]");
  expect_error([&] { parse_gpumemnet_row("input_channels:0_input_size:8.out", "[('conv2d', 64, 7)]", GpuMemNetKind::CNN,
                                         "cnn.csv:14"); },
               "cnn.csv:14: filename field 'input_channels:0' must be in [1, 1048576]");
  expect_error([&] { parse_gpumemnet_row("input:0_output:2.out", "[('linear', 2, 22)]", GpuMemNetKind::MLP, "mlp.csv:15"); },
               "mlp.csv:15: filename field 'input:0' must be in [1, 1048576]");
}

TEST(LoadSummary, MissingOrEmptyFile) {
  expect_error([] { load_summary("/nonexistent/x.model"); }, "/nonexistent/x.model: cannot open");
}

}  // namespace
}  // namespace colo::estimate
