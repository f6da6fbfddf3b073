// A convolution shape read back from the probe's key (trace/conv/conv_shape.h). Output sizes are
// PyTorch's (torch.nn.functional.conv2d / conv_transpose2d on these shapes gives the same).
#include <gtest/gtest.h>

#include <string>

#include "estimate/trace/conv/conv_shape.h"

namespace colo::estimate {
namespace {

TEST(ConvShape, ReadsAForwardKeyAndItsOutput) {
  // ResNet-50's first convolution: 224 -> 112.
  const auto s = parse_conv_shape("f:128x3x224x224:64x3x7x7:s2x2:p3x3:d1x1:g1:t0:float32:b0");
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->backward);
  EXPECT_EQ(s->output, (std::vector<std::uint64_t>{128, 64, 112, 112}));
  EXPECT_EQ(s->element_bytes, 4u);
  EXPECT_EQ(s->base_bytes(), 128ull * 64 * 112 * 112 * 4);  // the output is the largest
  EXPECT_EQ(s->workspace_class(), "f:float32:t0:strided");
  const auto f = s->features();
  EXPECT_DOUBLE_EQ(f[0], 7.0);  // log2 128
  EXPECT_DOUBLE_EQ(f[2], 6.0);  // log2 64 output channels
}

TEST(ConvShape, ClassesSeparateWhatCudnnTreatsApart) {
  auto cls = [](const char* key) {
    const auto s = parse_conv_shape(key);
    return s ? s->workspace_class() : std::string("?");
  };
  EXPECT_EQ(cls("f:8x64x56x56:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1"), "f:float32:t0:other");
  EXPECT_EQ(cls("f:8x64x56x56:256x64x1x1:s1x1:p0x0:d1x1:g1:t0:float32:b0"), "f:float32:t0:1x1");
  EXPECT_EQ(cls("f:8x64x56x56:64x1x3x3:s1x1:p1x1:d1x1:g64:t0:float32:b0"), "f:float32:t0:grouped");
  EXPECT_EQ(cls("b:8x64x56x56:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:bfloat16:m111"), "b:bfloat16:t0:other");
  // The first layer computes no input gradient: no data-gradient workspace.
  EXPECT_EQ(cls("b:8x3x56x56:64x3x3x3:s1x1:p1x1:d1x1:g1:t0:float32:m010"), "b:float32:t0:other:no-input-grad");
  EXPECT_EQ(cls("f:8x64x28x28:64x32x4x4:s2x2:p1x1:d1x1:g1:t1o0x0:float16:b1"), "f:float16:t1:strided");
}

TEST(ConvShape, WideLayersOnSmallImagesScaleWithTheWeight) {
  // 1 375 -> 1 678 channels on 10 x 10 at batch 2: the weight (79 MiB) is far past the activations.
  const auto s = parse_conv_shape("f:2x1375x10x10:1678x1375x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->base_bytes(), 1678ull * 1375 * 9 * 4);
}

TEST(ConvShape, TransposedAndOtherRanks) {
  // conv_transpose2d(28 -> 56): (28 - 1) * 2 - 2 + 4 + 0 + 1 = 57 - 1 = 56.
  const auto t = parse_conv_shape("f:8x64x28x28:64x32x4x4:s2x2:p1x1:d1x1:g1:t1o0x0:float32:b1");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->output, (std::vector<std::uint64_t>{8, 32, 56, 56}));
  const auto one = parse_conv_shape("f:4x16x100:32x16x5:s1:p2:d1:g1:t0:float32:b1");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->output, (std::vector<std::uint64_t>{4, 32, 100}));
  const auto three = parse_conv_shape("f:2x8x16x16x16:8x8x3x3x3:s2x2x2:p1x1x1:d1x1x1:g1:t0:float16:b0");
  ASSERT_TRUE(three);
  EXPECT_EQ(three->output, (std::vector<std::uint64_t>{2, 8, 8, 8, 8}));
  EXPECT_EQ(three->element_bytes, 2u);
  // One value standing for every spatial dimension, and dilation.
  const auto d = parse_conv_shape("f:1x1x32x32:1x1x3x3:s1:p0:d2:g1:t0:float64:b0");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->output, (std::vector<std::uint64_t>{1, 1, 28, 28}));
}

TEST(ConvShape, RefusesWhatTheProbeNeverWrites) {
  auto why = [](const std::string& key) {
    std::string w;
    return parse_conv_shape(key, &w) ? std::string("parsed") : w;
  };
  const std::string ok = "f:8x64x56x56:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1";
  EXPECT_EQ(why(ok), "parsed");
  EXPECT_EQ(why("f:8x64x56x56"), "not 10 ':'-separated fields");
  EXPECT_EQ(why("x:8x64x56x56:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1"), "pass is not 'f' or 'b'");
  EXPECT_EQ(why("f:8x64:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1"),
            "input shape is not N x C x 1-3 spatial sizes, each in [1, 2^40]");
  EXPECT_EQ(why("f:0x64x56x56:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1"),
            "input shape is not N x C x 1-3 spatial sizes, each in [1, 2^40]");
  EXPECT_EQ(why("f:8x64x56x1099511627777:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1"),
            "input shape is not N x C x 1-3 spatial sizes, each in [1, 2^40]");
  EXPECT_EQ(why("f:8x64x56x56:64x64x3:s1x1:p1x1:d1x1:g1:t0:float32:b1"), "weight shape does not match the input's rank");
  EXPECT_EQ(why("f:8x64x56x56:64x64x3x3:s0x1:p1x1:d1x1:g1:t0:float32:b1"), "bad stride");
  EXPECT_EQ(why("f:8x64x56x56:64x64x3x3:s1x1x1:p1x1:d1x1:g1:t0:float32:b1"), "bad stride");
  EXPECT_EQ(why("f:8x64x56x56:64x64x3x3:s1x1:q1x1:d1x1:g1:t0:float32:b1"), "bad padding");
  EXPECT_EQ(why("f:8x64x56x56:64x64x3x3:s1x1:p1x1:d0x1:g1:t0:float32:b1"), "bad dilation");
  EXPECT_EQ(why("f:8x64x56x56:64x64x3x3:s1x1:p1x1:d1x1:g0:t0:float32:b1"), "bad groups");
  EXPECT_EQ(why("f:8x64x56x56:64x64x3x3:s1x1:p1x1:d1x1:g1:t2:float32:b1"), "bad transposed field");
  EXPECT_EQ(why("f:8x64x56x56:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:int8:b1"),
            "dtype is not float32, float16, bfloat16 or float64");
  EXPECT_EQ(why("b:8x64x56x56:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1"),
            "backward key does not end in an output mask (m111)");
  EXPECT_EQ(why("b:8x64x56x56:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:m121"),
            "backward key does not end in an output mask (m111)");
  EXPECT_EQ(why("f:8x64x56x56:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:m111"), "forward key does not end in b0 or b1");
  EXPECT_EQ(why("f:8x64x56x56:64x32x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1"),
            "weight channels do not match the input and groups");
  EXPECT_EQ(why("f:8x64x56x56:63x32x3x3:s1x1:p1x1:d1x1:g2:t0:float32:b1"),
            "weight channels do not match the input and groups");
  EXPECT_EQ(why("f:8x64x28x28:32x32x4x4:s2x2:p1x1:d1x1:g1:t1o0x0:float32:b1"), "weight channels do not match the input");
  // A kernel larger than the padded input: PyTorch refuses it too.
  EXPECT_EQ(why("f:8x64x2x2:64x64x7x7:s1x1:p0x0:d1x1:g1:t0:float32:b1"), "the output would be empty");
  // Dilation x kernel far past 2^64: refused, not wrapped around.
  EXPECT_EQ(why("f:1x1x8x8:1x1x1099511627776x1:s1x1:p0x0:d1099511627776x1:g1:t0:float32:b1"),
            "the output would be empty");
}

TEST(ConvShape, HugeShapesSaturateInsteadOfWrapping) {
  const auto s = parse_conv_shape(
      "f:1099511627776x1099511627776x1x1:1099511627776x1099511627776x1x1:s1x1:p0x0:d1x1:g1:t0:float64:b0");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->base_bytes(), UINT64_MAX);
}

}  // namespace
}  // namespace colo::estimate
