#pragma once
// The block structure of the GPUMemNet CNN generator (NeuroNetGen's cnn.py), used to rebuild a
// dataset row's layers exactly where the generic channel recovery has to guess:
//   - every block is ConvBlock = Conv2d(k=3, pad 1, bias) [BatchNorm2d] activation [Dropout];
//   - "residual": shortcut (1x1 conv [+ BatchNorm2d or Identity], or Identity), two ConvBlocks,
//     then `x + residual`, an out-of-place sum the row does not list;
//   - "dense": blocks of four ConvBlocks that each read torch.cat(features) (growth rate from the
//     params), the block's output is torch.cat of all features, transitions are a 1x1 ConvBlock
//     halving the channels with ReLU and an AvgPool2d (logged as 'd');
//   - every other architecture is a chain of ConvBlocks, each reading the previous one.
// The generator's rows end with AdaptiveAvgPool2d, Linear and Softmax (Sigmoid for one class).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "estimate/graph/model_graph.h"

namespace colo::estimate {

// One "(type, activations, params)" entry of the Activations-Params column.
struct GpuMemNetTuple {
  std::string type;
  std::int64_t acts = 0;
  std::int64_t params = 0;
};

// A layer of the dataset's type name ('conv2d', 'batch_norm2d', 'GELU', 'd', ...) with its kind.
Layer gpumemnet_layer(const std::string& type);

// The layers of a CNN row rebuilt from the generator's structure for `arch`, with Add/Concat layers
// for the sums and concatenations the row does not list and every conv's in/out channels and
// kernel checked against its parameter count; nullopt when the row does not follow that structure
// exactly (the caller then falls back to the generic recovery). in_hw: input height * width.
std::optional<std::vector<Layer>> rebuild_gpumemnet_cnn(std::string_view arch, const std::vector<GpuMemNetTuple>& tuples,
                                                         std::int64_t in_channels, std::int64_t in_hw);

}  // namespace colo::estimate
