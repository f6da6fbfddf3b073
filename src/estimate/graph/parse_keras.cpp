// Keras model.summary() text -> ModelGraph.
//
//   Model: "sequential"
//   _________________________________________________________________
//    Layer (type)                Output Shape              Param #
//   =================================================================
//    conv2d (Conv2D)             (None, 26, 26, 32)        320
//    ...
//   =================================================================
//   Total params: 1,199,882
//
// Keras shapes are channels-last; they are stored channels-first like PyTorch's. Functional
// models add a "Connected to" column, which is ignored.
#include <sstream>
#include <string>

#include "core/error.h"
#include "estimate/graph/parsers.h"
#include "estimate/graph/summary_text.h"

namespace colo::estimate {

namespace {

using namespace summary_text;

bool is_rule(const std::string& t) {
  return t.size() >= 8 && (t.find_first_not_of('=') == std::string::npos || t.find_first_not_of('_') == std::string::npos);
}

}  // namespace

ModelGraph parse_keras(std::string_view text, const std::string& source) {
  ModelGraph g;
  g.source_format = "keras";
  std::stringstream in{std::string(text)};
  std::string raw;
  std::size_t line = 0;
  std::size_t total_line = 0;  // the "Total params:" line
  enum { Before, Header, Rows, After } state = Before;
  bool pending_wrap = false;
  while (std::getline(in, raw)) {
    ++line;
    const std::string t = trim(raw);
    if (state == Before) {
      if (t.find("Layer (type)") != std::string::npos) {
        if (t.find("Output Shape") == std::string::npos || t.find("Param #") == std::string::npos)
          fail(source, line, "table header lacks 'Output Shape' or 'Param #'");
        state = Header;
      }
      continue;
    }
    if (state == Header) {
      if (!is_rule(t)) fail(source, line, "expected a '====' rule under the header");
      state = Rows;
      continue;
    }
    if (state == Rows) {
      if (t.empty() || t.find_first_not_of('_') == std::string::npos) continue;
      if (t.find_first_not_of('=') == std::string::npos) {
        state = After;
        continue;
      }
      // The rest of a type name Keras wrapped onto the next line ("MaxPooling2D" + " )").
      if (t.front() == ')' || (pending_wrap && t.find("(None") == std::string::npos)) {
        pending_wrap = false;
        continue;
      }
      // name (Type)   (None, d1, d2, ...)   params   [connected to]
      const auto tp_open = t.find(" (");
      const auto shape_at = t.find("(None");
      if (tp_open == std::string::npos || shape_at == std::string::npos || shape_at <= tp_open + 1)
        fail(source, line, "layer row without 'name (Type)  (None, ...)': '" + t + "'");
      auto tp_close = t.find(')', tp_open);
      Layer l;
      l.name = trim(t.substr(0, tp_open));
      if (tp_close > shape_at) {  // wrapped: the type's ')' is on the next line
        l.type_name = trim(t.substr(tp_open + 2, shape_at - tp_open - 2));
        tp_close = shape_at - 1;
        pending_wrap = true;
      } else {
        l.type_name = t.substr(tp_open + 2, tp_close - tp_open - 2);
      }
      const auto sh_open = shape_at;
      const auto sh_close = t.find(')', sh_open == std::string::npos ? 0 : sh_open);
      if (sh_open == std::string::npos || sh_close == std::string::npos)
        fail(source, line, "layer row without an output shape: '" + t + "'");
      std::string shape = t.substr(sh_open + 1, sh_close - sh_open - 1);
      std::stringstream ss(shape);
      std::string item;
      std::vector<std::int64_t> dims;
      bool first = true;
      while (std::getline(ss, item, ',')) {
        item = trim(item);
        if (first) {
          first = false;
          if (item != "None" && item.find_first_not_of("0123456789") != std::string::npos)
            fail(source, line, "bad output shape '(" + shape + ")'");
          continue;  // the batch dim
        }
        if (item.empty()) continue;
        if (item.find_first_not_of("0123456789") != std::string::npos || item.size() > 12)
          fail(source, line, "bad output shape '(" + shape + ")'");
        dims.push_back(std::stoll(item));
        if (dims.back() == 0) fail(source, line, "bad output shape '(" + shape + ")' (a zero dimension)");
      }
      if (dims.size() >= 2) {  // channels-last -> channels-first
        dims.insert(dims.begin(), dims.back());
        dims.pop_back();
      }
      l.out_shape = dims;
      std::string rest = trim(t.substr(sh_close + 1));
      const auto sp = rest.find(' ');
      l.params = parse_param_count(sp == std::string::npos ? rest : rest.substr(0, sp), source, line);
      l.kind = classify_layer_type(l.type_name);
      if (l.type_name == "InputLayer") {
        g.input_shape = dims;
        continue;
      }
      if (l.type_name == "Activation" || l.type_name == "ReLU") {
        // Keras' Activation layer: the function is in the name only when named after it.
        l.kind = l.type_name == "ReLU" ? LayerKind::ReLU : LayerKind::Activation;
      }
      g.layers.push_back(std::move(l));
      continue;
    }
    if (t.rfind("Total params:", 0) == 0) {
      auto v = trim(t.substr(13));
      const auto sp = v.find(' ');
      g.declared_total_params = parse_param_count(sp == std::string::npos ? v : v.substr(0, sp), source, line);
      total_line = line;
    }
  }
  if (state == Before) fail(source, line == 0 ? 1 : line, "not a Keras summary (no 'Layer (type)' header)");
  if (state != After) fail(source, line, "table not closed by a '====' rule (truncated file?)");
  if (g.layers.empty()) fail(source, line, "summary has no layers");
  check_declared_total(g.declared_total_params, g.layers, source, total_line);  // (the InputLayer's 0 included)
  if (g.input_shape.empty()) {
    // Sequential models do not print their InputLayer: infer the input from the first layer.
    const Layer& f = g.layers.front();
    g.input_shape = f.out_shape;
  }
  bool has_conv = false;
  for (const auto& l : g.layers) has_conv |= l.kind == LayerKind::Conv;
  g.family = has_conv ? ModelFamily::CNN : ModelFamily::MLP;
  g.finalize();
  return g;
}

}  // namespace colo::estimate
