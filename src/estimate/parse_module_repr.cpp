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
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "estimate/parsers.h"
#include "estimate/summary_text.h"

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
      l.inplace = args.find("inplace=True") != std::string::npos;
      const bool in_sdpa = stack.back().type.find("Sdpa") != std::string::npos;
      std::smatch a;
      if (type == "Embedding") {
        static const std::regex emb(R"(^\s*(\d+),\s*(\d+))");
        if (!std::regex_search(args, a, emb)) fail(source, line, "Embedding without (num, dim)");
        const std::int64_t num = count(a[1], source, line), dim = count(a[2], source, line);
        embeddings.emplace_back(num, dim);
        if (g.hidden == 0) g.hidden = dim;
        features = dim;
        l.out_features = dim;
      } else if (type == "Linear") {
        static const std::regex lin(R"(in_features=(\d+),\s*out_features=(\d+),\s*bias=(True|False))");
        if (!std::regex_search(args, a, lin)) fail(source, line, "Linear without in_features/out_features");
        l.in_features = count(a[1], source, line);
        l.out_features = count(a[2], source, line);
        const bool bias = a[3] == "True";
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
        static const std::regex ln(R"(^\(\s*(\d+),?\s*\))");
        if (std::regex_search(args, a, ln)) features = count(a[1], source, line);
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
