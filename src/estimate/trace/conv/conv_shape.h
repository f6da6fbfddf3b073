#pragma once
// A convolution's shape, read back from the probe's shape key (python/colo_probe/conv_shape.py):
//   f:128x64x56x56:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1      forward (bias or not)
//   b:128x64x56x56:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:m111    backward (output_mask)
// What the workspace of a shape the GPU's table lacks is predicted from (conv_workspace_neighbours.h):
// which cuDNN algorithm family it falls in (its class) and where it lies among the measured shapes.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace colo::estimate {

struct ConvShape {
  bool backward = false;
  std::vector<std::uint64_t> input;   // N, C, spatial...
  std::vector<std::uint64_t> weight;  // out (in, when transposed) channels, in/groups, kernel...
  std::vector<std::uint64_t> stride, padding, dilation, output_padding;  // one per spatial dimension
  std::uint64_t groups = 1;
  bool transposed = false;
  std::string dtype;
  std::uint64_t element_bytes = 4;
  bool computes_input_grad = true;    // backward: output_mask's first entry
  std::vector<std::uint64_t> output;  // derived: N, C_out, spatial...

  // max(input, output, weight) bytes, saturating: the size cuDNN's workspaces scale with (the
  // weight dominates wide layers on small images: transformed filters).
  std::uint64_t base_bytes() const;
  // Shapes whose workspaces are alike: pass, dtype, transposed, grouped / strided / 1x1 / other,
  // and for backward whether the input gradient is computed (without it: no data-gradient workspace).
  std::string workspace_class() const;
  // log2 of batch, input channels, output channels, spatial size, kernel size: where the shape
  // lies among others of its class.
  std::array<double, 5> features() const;
};

// The shape of `key`, or nullopt (and `why`) when the key is not a convolution the probe writes:
// wrong field count, a dimension of 0 or past 2^40, an unknown dtype, an empty output.
std::optional<ConvShape> parse_conv_shape(std::string_view key, std::string* why = nullptr);

}  // namespace colo::estimate
