// torchsummary tables -> ModelGraph.
//
//   ----------------------------------------------------------------
//           Layer (type)               Output Shape         Param #
//   ================================================================
//               Conv2d-1         [32, 64, 112, 112]           9,408
//   ...
//   ================================================================
//   Total params: 25,557,032
//   ...
//   Input size (MB): 18.38
//
// torchsummary lists every module, composites (Bottleneck, InceptionA, ...) after their children;
// those are kept as LayerKind::Container. The first dim of a shape is the batch (-1 or the batch
// the summary was taken with) and is dropped.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>
#include <string>
#include <unordered_set>

#include "core/error.h"
#include "estimate/graph/parsers.h"
#include "core/parse_number.h"
#include "estimate/graph/summary_text.h"

namespace colo::estimate {

namespace {

using namespace summary_text;

bool is_rule(const std::string& t, char c) {
  return t.size() >= 3 && t.find_first_not_of(c) == std::string::npos;
}

// "[32, 64, 112, 112]" -> {64,112,112} (batch dropped); "[[-1, 8], [-1, 8]]" -> first list.
std::vector<std::int64_t> parse_shape(const std::string& s, const std::string& source, std::size_t line,
                                      std::int64_t* batch) {
  std::string t = s;
  if (std::count(s.begin(), s.end(), '[') != std::count(s.begin(), s.end(), ']'))
    fail(source, line, "bad output shape '" + s + "' (unbalanced brackets)");
  if (t.rfind("[[", 0) == 0) t = t.substr(1, t.find(']') );
  if (t.size() < 2 || t.front() != '[' || t.back() != ']') fail(source, line, "bad output shape '" + s + "'");
  std::vector<std::int64_t> dims;
  std::stringstream ss(t.substr(1, t.size() - 2));
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = trim(item);
    if (item.empty()) fail(source, line, "bad output shape '" + s + "'");
    try {
      std::size_t used = 0;
      long long v = std::stoll(item, &used);
      if (used != item.size()) throw std::invalid_argument("x");
      dims.push_back(v);
    } catch (const std::exception&) {
      fail(source, line, "bad output shape '" + s + "'");
    }
  }
  if (dims.empty()) fail(source, line, "empty output shape");
  *batch = dims.front();
  dims.erase(dims.begin());
  for (auto d : dims)
    if (d <= 0 || d > (1 << 30)) fail(source, line, "dimension out of range in output shape '" + s + "'");
  return dims;
}

// Composite modules seen in torchvision/timm summaries. Their own row allocates at most the
// block's combined output (a concatenation or a non-in-place residual sum).
bool is_container(const std::string& type) {
  static const std::unordered_set<std::string> names = {
      "Sequential", "ModuleList", "Bottleneck", "BasicBlock", "BasicConv2d", "InceptionA", "InceptionB",
      "InceptionC", "InceptionD", "InceptionE", "InceptionAux", "MBConv", "FusedMBConv",
      "InvertedResidual", "Block", "SqueezeExcite", "SqueezeExcitation", "SeparableConv2d",
      "DepthwiseSeparableConv", "ConvNormActivation", "Conv2dNormActivation", "ConvBNReLU",
      "ConvBNActivation", "EdgeResidual", "ConvBnAct", "Fire", "DenseLayer", "_DenseLayer",
      "_DenseBlock", "_Transition", "Transition", "SelectAdaptivePool2d"};
  return names.count(type) > 0;
}

}  // namespace

ModelGraph parse_torchsummary(std::string_view text, const std::string& source) {
  ModelGraph g;
  g.source_format = "torchsummary";
  std::stringstream in{std::string(text)};
  std::string raw;
  std::size_t line = 0, header_line = 0;
  enum { Before, Header, Rows, After } state = Before;
  std::size_t total_line = 0;  // the "Total params:" line
  std::int64_t summary_batch = -1;
  double input_mb = -1;
  while (std::getline(in, raw)) {
    ++line;
    const std::string t = trim(raw);
    if (state == Before) {
      if (t.find("Layer (type)") != std::string::npos) {
        if (t.find("Output Shape") == std::string::npos || t.find("Param #") == std::string::npos)
          fail(source, line, "table header lacks 'Output Shape' or 'Param #'");
        state = Header;
        header_line = line;
      } else if (!t.empty() && !is_rule(t, '-')) {
        fail(source, line, "not a torchsummary table (expected the 'Layer (type)' header)");
      }
      continue;
    }
    if (state == Header) {
      if (!is_rule(t, '=')) fail(source, line, "expected a '====' rule under the header");
      state = Rows;
      continue;
    }
    if (state == Rows) {
      if (is_rule(t, '=')) {
        state = After;
        continue;
      }
      if (t.empty()) continue;
      // NAME-INDEX  SHAPE  PARAMS ; the shape is the bracketed middle part.
      const auto lb = t.find('[');
      const auto rb = t.rfind(']');
      if (lb == std::string::npos || rb == std::string::npos || rb < lb)
        fail(source, line, "layer row without a [shape]: '" + t + "'");
      const std::string name = trim(t.substr(0, lb));
      const std::string shape = t.substr(lb, rb - lb + 1);
      const std::string params = trim(t.substr(rb + 1));
      const auto dash = name.rfind('-');
      if (dash == std::string::npos || dash == 0 || dash + 1 == name.size() ||
          name.find_first_not_of("0123456789", dash + 1) != std::string::npos)
        fail(source, line, "layer name '" + name + "' is not TYPE-INDEX");
      Layer l;
      l.type_name = name.substr(0, dash);
      // A type is a Python class name; a corrupted one ("Conv\xff\xfe2d", "Conv2d\x01") is an
      // error here rather than a layer of the known type its name starts with.
      for (const char c : l.type_name) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x80 || !(std::isalnum(u) || c == '_' || c == '.')) {
          static constexpr char hex[] = "0123456789abcdef";
          std::string shown;
          for (const char d : l.type_name) {
            const auto v = static_cast<unsigned char>(d);
            if (v >= 0x80 || v < 0x20 || v == 0x7f) shown += std::string("\\x") + hex[v >> 4] + hex[v & 15];
            else shown += d;
          }
          fail(source, line, "layer type '" + shown + "' is not a class name (ASCII letters, digits, '_')");
        }
      }
      l.name = name;
      std::int64_t b = 0;
      l.out_shape = parse_shape(shape, source, line, &b);
      if (summary_batch == -1 && b > 0) summary_batch = b;
      l.params = parse_param_count(params, source, line);
      l.kind = classify_layer_type(l.type_name);
      if (l.type_name == "BatchNormAct2d") l.kind = LayerKind::BatchNorm;
      if (l.kind == LayerKind::Unknown && is_container(l.type_name)) l.kind = LayerKind::Container;
      g.layers.push_back(std::move(l));
      continue;
    }
    // After the table: totals and sizes.
    if (t.find("Layer (type)") != std::string::npos)
      fail(source, line, "a second torchsummary table (one summary per file)");
    if (t.rfind("Total params:", 0) == 0) {
      g.declared_total_params = parse_param_count(trim(t.substr(13)), source, line);
      total_line = line;
    } else if (t.rfind("Input size (MB):", 0) == 0) {
      input_mb = parse_real(trim(t.substr(16)), source + ":" + std::to_string(line) + ": input size (MB)", 0, 1e9);
    }
  }
  if (state == Before) fail(source, line == 0 ? 1 : line, "not a torchsummary table (no 'Layer (type)' header)");
  if (state != After) fail(source, line, "table not closed by a '====' rule (truncated file?)");
  if (g.layers.empty()) fail(source, header_line, "table has no layers");
  check_declared_total(g.declared_total_params, g.layers, source, total_line);
  // Input elements per sample from "Input size (MB)" (fp32, batch as in the shapes; -1 means 1).
  if (input_mb > 0) {
    const double batch = summary_batch > 0 ? static_cast<double>(summary_batch) : 1.0;
    g.input_shape = {round_checked(input_mb * 1048576.0 / 4.0 / batch, source + ": input elements per sample", 0,
                                   std::int64_t{1} << 50)};
  } else {
    g.input_shape = {1};
  }
  bool has_conv = false;
  for (const auto& l : g.layers) has_conv |= l.kind == LayerKind::Conv;
  g.family = has_conv ? ModelFamily::CNN : ModelFamily::MLP;
  g.finalize();
  return g;
}

}  // namespace colo::estimate
