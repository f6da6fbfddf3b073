// Printed nn.Module trees with parameter counts -> ModelGraph (the carma transformer summaries):
//
//   BertForMaskedLM(
//     (bert): BertModel(
//       (embeddings): BertEmbeddings(
//         (word_embeddings): Embedding(28996, 768, padding_idx=0), 22,268,928 params
//       ), 22,665,216 params
//   ...
//   ), 130,638,728 params
//
// Leaves become layers in print order (which is definition order: close to, not exactly,
// execution order). There are no shapes: a layer's output is [seq_len, features], features
// from the layer's arguments (or, for GPT-2's Conv1D(), from its parameter count and the hidden
// size). Attention containers become one Attention layer where they close. Output layers tied to
// the input embedding (Hugging Face's default) own only their bias.
// GCC 12's std::regex instantiation trips a false -Wmaybe-uninitialized (libstdc++ internals).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <cctype>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/parse_number.h"
#include "estimate/graph/parsers.h"
#include "estimate/graph/summary_text.h"

namespace colo::estimate {

namespace {

using namespace summary_text;

// Digits of a count ("22,268,928"); values past 2^50 are nonsense in a summary and rejected.
std::int64_t count(const std::string& s, const std::string& source, std::size_t line) {
  std::int64_t v = 0;
  for (char c : s)
    if (c >= '0' && c <= '9') {
      v = v * 10 + (c - '0');
      if (v > (std::int64_t{1} << 50)) fail(source, line, "number out of range: '" + s + "'");
    }
  return v;
}

// A layer's constructor arguments, "28996, 768, padding_idx=0", split at top-level commas into
// positional ones and name=value ones. Values are kept as text; the caller parses the ones it
// uses strictly (a stray "1e400" where an integer belongs is an error, never read as "1").
struct Args {
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> named;
  const std::string* get(const std::string& key) const {
    for (const auto& [k, v] : named)
      if (k == key) return &v;
    return nullptr;
  }
};

Args split_args(const std::string& args, const std::string& source, std::size_t line) {
  Args out;
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  for (char c : args) {
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') {
      if (--depth < 0) fail(source, line, "unbalanced parentheses in layer arguments");
    }
    if (c == ',' && depth == 0) {
      parts.push_back(trim(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (depth != 0) fail(source, line, "unbalanced parentheses in layer arguments");
  if (!trim(cur).empty() || !parts.empty()) parts.push_back(trim(cur));
  for (const auto& p : parts) {
    if (p.empty()) fail(source, line, "empty layer argument");
    const auto eq = p.find('=');
    std::size_t i = 0;
    while (i < p.size() && (std::isalnum(static_cast<unsigned char>(p[i])) || p[i] == '_')) ++i;
    if (eq != std::string::npos && eq == i && i > 0 && !std::isdigit(static_cast<unsigned char>(p[0]))) {
      out.named.emplace_back(p.substr(0, eq), trim(p.substr(eq + 1)));
    } else {
      if (!out.named.empty()) fail(source, line, "positional layer argument '" + p + "' after a named one");
      out.positional.push_back(p);
    }
  }
  return out;
}

std::string located(const std::string& source, std::size_t line, const std::string& what) {
  return one_line(source + ":" + std::to_string(line) + ": " + what);
}

// Widths and counts in a layer's arguments. Feature widths stop at 2^20 (ModelGraph's bound),
// embedding table sizes at 2^40 (the parameter bound).
constexpr std::int64_t kMaxFeatures = std::int64_t{1} << 20;
constexpr std::int64_t kMaxRows = std::int64_t{1} << 40;

std::int64_t int_arg(const std::string& text, const std::string& source, std::size_t line, const std::string& what,
                     std::int64_t lo, std::int64_t hi) {
  return parse_integer(text, located(source, line, what), lo, hi);
}

void bool_arg(const Args& a, const std::string& key, const std::string& source, std::size_t line,
              const std::string& type) {
  if (const auto* v = a.get(key); v && *v != "True" && *v != "False")
    fail(source, line, type + " " + key + ": '" + *v + "' is not True or False");
}

// The named numbers PyTorch prints for the layers the summaries hold: checked when present so a
// corrupted value is reported rather than carried along.
void check_named_numbers(const Args& a, const std::string& source, std::size_t line, const std::string& type) {
  if (const auto* v = a.get("p")) parse_real(*v, located(source, line, type + " p"), 0.0, 1.0);
  if (const auto* v = a.get("eps")) parse_real(*v, located(source, line, type + " eps"), 0.0, 1.0);
  if (const auto* v = a.get("padding_idx")) int_arg(*v, source, line, type + " padding_idx", -kMaxRows, kMaxRows);
  for (const char* key : {"inplace", "bias", "elementwise_affine"}) bool_arg(a, key, source, line, type);
}

// Bounds on attacker-controlled input. std::regex (libstdc++) matches recursively, one stack
// frame per character for the ".*"-style parts, so a line is length-checked before any regex sees
// it; real reprs have lines under 100 characters. Nesting is kept in an explicit stack (no
// recursion), but a tree deeper than any real model is refused with a clear message.
constexpr std::size_t kMaxLineChars = 1024;
constexpr std::size_t kMaxDepth = 64;

struct Frame {
  std::string type, name;
  std::int64_t child_params = 0;
  std::size_t first_layer = 0;
};

}  // namespace

ModelGraph parse_module_repr(std::string_view text, const std::string& source, std::int64_t seq_len) {
  if (seq_len <= 0) seq_len = 512;
  ModelGraph g;
  g.source_format = "module-repr";
  g.family = ModelFamily::Transformer;
  g.seq_len = seq_len;
  g.input_shape = {seq_len};

  static const std::regex open_re(R"(^\s*(?:\(([^)]*)\):\s*)?([A-Za-z_][A-Za-z0-9_]*)\($)");
  static const std::regex leaf_re(R"(^\s*\(([^)]*)\):\s*([A-Za-z_][A-Za-z0-9_]*)\((.*)\),\s*([\d,]+) params$)");
  static const std::regex close_re(R"(^\s*\)(?:,\s*([\d,]+) params)?$)");
  static const std::regex total_re(R"(^Total params:\s*([\d,]+))");

  std::vector<Frame> stack;
  std::vector<std::pair<std::int64_t, std::int64_t>> embeddings;  // (num, dim)
  std::stringstream in{std::string(text)};
  std::string raw;
  std::size_t line = 0;
  bool done = false, any = false;
  std::int64_t features = 0;  // width of the current activation
  while (std::getline(in, raw)) {
    ++line;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    if (raw.find_first_not_of(" \t") == std::string::npos) continue;
    if (raw.size() > kMaxLineChars)
      fail(source, line, "line longer than " + std::to_string(kMaxLineChars) + " characters (not a module repr?)");
    std::smatch m;
    if (done) {
      if (std::regex_search(raw, m, total_re)) g.declared_total_params = count(m[1], source, line);
      continue;  // trailer: totals and rules
    }
    if (std::regex_match(raw, m, open_re)) {
      if (stack.size() >= kMaxDepth)
        fail(source, line, "modules nested deeper than " + std::to_string(kMaxDepth) + " levels");
      stack.push_back({m[2], m[1], 0, g.layers.size()});
      any = true;
      continue;
    }
    if (std::regex_match(raw, m, leaf_re)) {
      if (stack.empty()) fail(source, line, "layer outside any module");
      const std::string name = m[1], type = m[2], args = m[3];
      const std::int64_t params = count(m[4], source, line);
      stack.back().child_params += params;
      Layer l;
      l.name = name;
      l.type_name = type;
      l.params = params;
      l.depth = static_cast<int>(stack.size());
      l.kind = classify_layer_type(type);
      const bool in_sdpa = stack.back().type.find("Sdpa") != std::string::npos;
      // The arguments of the layers read here are parsed strictly; others' (which may hold
      // quoted strings and the like) are not interpreted beyond inplace=.
      const bool interpreted = type == "Embedding" || type == "Linear" || l.kind == LayerKind::LayerNorm ||
                               l.kind == LayerKind::Dropout;
      const Args a = interpreted ? split_args(args, source, line) : Args{};
      if (interpreted) {
        check_named_numbers(a, source, line, type);
        if (const auto* v = a.get("inplace")) l.inplace = *v == "True";
      } else {
        l.inplace = args.find("inplace=True") != std::string::npos;
      }
      if (type == "Embedding") {
        if (a.positional.size() < 2) fail(source, line, "Embedding without (num, dim)");
        const std::int64_t num = int_arg(a.positional[0], source, line, "Embedding num_embeddings", 1, kMaxRows);
        const std::int64_t dim = int_arg(a.positional[1], source, line, "Embedding embedding_dim", 1, kMaxFeatures);
        embeddings.emplace_back(num, dim);
        if (g.hidden == 0) g.hidden = dim;
        features = dim;
        l.out_features = dim;
      } else if (type == "Linear") {
        const auto* in_f = a.get("in_features");
        const auto* out_f = a.get("out_features");
        if (!in_f || !out_f || !a.get("bias")) fail(source, line, "Linear without in_features/out_features");
        l.in_features = int_arg(*in_f, source, line, "Linear in_features", 1, kMaxFeatures);
        l.out_features = int_arg(*out_f, source, line, "Linear out_features", 1, kMaxFeatures);
        const bool bias = *a.get("bias") == "True";
        for (auto [num, dim] : embeddings)
          if (num == l.out_features && dim == l.in_features) {
            l.params = bias ? l.out_features : 0;  // weight tied to the input embedding
            break;
          }
        features = l.out_features;
      } else if (type == "Conv1D") {
        // GPT-2's Conv1D(nf, nx): params = nx*nf + nf with nx the hidden size or 4x it.
        if (g.hidden <= 0) fail(source, line, "Conv1D before any embedding: hidden size unknown");
        l.kind = LayerKind::Linear;
        for (std::int64_t nx : {g.hidden, 4 * g.hidden})
          if (params % (nx + 1) == 0) {
            l.in_features = nx;
            l.out_features = params / (nx + 1);
            break;
          }
        if (l.out_features == 0) fail(source, line, "Conv1D params do not match the hidden size");
        features = l.out_features;
      } else if (l.kind == LayerKind::LayerNorm) {
        // normalized_shape: "(768,)" or "768"; a one-element shape is the feature width.
        if (!a.positional.empty()) {
          std::string shape = a.positional[0];
          if (shape.size() >= 2 && shape.front() == '(' && shape.back() == ')') shape = shape.substr(1, shape.size() - 2);
          if (!shape.empty() && shape.back() == ',') shape.pop_back();
          std::vector<std::int64_t> dims;
          std::stringstream ds(shape);
          for (std::string d; std::getline(ds, d, ',');)
            dims.push_back(int_arg(d, source, line, type + " normalized_shape", 1, kMaxFeatures));
          if (dims.empty()) fail(source, line, type + " with an empty normalized_shape");
          if (dims.size() == 1) features = dims[0];
        }
      } else if (l.kind == LayerKind::Dropout && in_sdpa && name.find("resid") == std::string::npos) {
        l.kind = LayerKind::Identity;  // the fused attention kernel applies this dropout itself
      }
      if (features <= 0) features = g.hidden > 0 ? g.hidden : 1;
      l.out_shape = {seq_len, features};
      g.layers.push_back(std::move(l));
      continue;
    }
    if (std::regex_match(raw, m, close_re)) {
      if (stack.empty()) fail(source, line, "')' without an open module");
      Frame f = stack.back();
      stack.pop_back();
      const std::int64_t total = m[1].matched ? count(m[1], source, line) : f.child_params;
      if (total < f.child_params)
        fail(source, line, "'" + f.type + "' states " + std::to_string(total) + " params, fewer than its children's " +
                               std::to_string(f.child_params));
      if (!stack.empty()) stack.back().child_params += total;
      bool inner_attention = false;  // an enclosing BertAttention holds BertSdpaSelfAttention: count it once
      for (std::size_t i = f.first_layer; i < g.layers.size(); ++i)
        inner_attention |= g.layers[i].kind == LayerKind::Attention;
      if (f.type.find("Attention") != std::string::npos && !inner_attention) {
        Layer at;
        at.kind = LayerKind::Attention;
        at.type_name = f.type;
        at.name = f.name;
        at.depth = static_cast<int>(stack.size());
        at.params = total - f.child_params;  // parameters held directly (XLNet's q/k/v/o/r)
        const std::int64_t h = g.hidden > 0 ? g.hidden : features;
        at.attn_heads = h / 64;  // 64-wide heads in BERT, GPT-2 and XLNet
        at.attn_materialized = f.type.find("Sdpa") == std::string::npos;
        at.out_shape = {seq_len, h};
        features = h;
        g.layers.push_back(std::move(at));
      }
      if (stack.empty()) done = true;
      continue;
    }
    fail(source, line, "unrecognised line in module repr: '" + raw.substr(0, 60) + "'");
  }
  if (!any) fail(source, 1, "not a module repr (no 'Name(' opening line)");
  if (!stack.empty()) fail(source, line, "module '" + stack.back().type + "' is never closed (truncated file?)");
  if (g.layers.empty()) fail(source, line, "module repr lists no layers");
  g.finalize();
  return g;
}

}  // namespace colo::estimate
