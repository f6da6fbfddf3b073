// GPUMemNet dataset rows -> ModelGraph.
//
// The filename encodes the generator's hyper-parameters ("input_channels:3_num_classes:453_depth:22_
// arch:uniform_base_filters:98_batch:62_input_size:174_act:gelu_dropout:0.34_dropout:True_batchnorm:
// False.out"); Activations-Params lists the layers as (type, activations, params). For CNN rows the
// activations are the output's H*W only, so channels are recovered from parameter counts: a conv
// with bias has params = (cin*k*k + 1) * cout, a batch norm 2*C, a linear (in + 1) * out. Rows that
// follow the generator's block structure are rebuilt exactly (gpumemnet_cnn_blocks.h); the generic
// recovery below is for rows that do not.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "estimate/gpumemnet/gpumemnet_features.h"
#include "estimate/graph/gpumemnet_cnn_blocks.h"
#include "estimate/graph/parsers.h"
#include "estimate/graph/summary_text.h"
#include "common/ascii_lower.h"

namespace colo::estimate {

namespace {

using Tuple = GpuMemNetTuple;

[[noreturn]] void fail(const std::string& location, const std::string& what) {
  throw UserError(summary_text::one_line(location + ": " + what));  // quoted fields may hold newlines
}

std::int64_t parse_int(std::string_view s, const std::string& location, const char* what) {
  std::int64_t v = 0;
  if (s.empty()) fail(location, std::string("empty ") + what);
  for (char c : s) {
    if (c < '0' || c > '9') fail(location, std::string("bad ") + what + " '" + std::string(s) + "'");
    v = v * 10 + (c - '0');
    if (v > (std::int64_t{1} << 50)) fail(location, std::string(what) + " out of range");
  }
  return v;
}

std::string trim(std::string_view s) {
  std::size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t')) --b;
  return std::string(s.substr(a, b - a));
}

// "[('conv2d', 30276, 2744), ('GELU', 30276, 0)]"
std::vector<Tuple> parse_tuples(std::string_view s, const std::string& location) {
  std::vector<Tuple> out;
  std::string t = trim(s);
  if (t.size() < 2 || t.front() != '[' || t.back() != ']')
    fail(location, "Activations-Params is not a [...] list");
  std::size_t i = 1;
  const std::size_t end = t.size() - 1;
  while (i < end) {
    while (i < end && (t[i] == ' ' || t[i] == ',')) ++i;
    if (i >= end) break;
    if (t[i] != '(') fail(location, "Activations-Params: expected '(' at tuple " + std::to_string(out.size() + 1));
    const auto close = t.find(')', i);
    if (close == std::string::npos || close > end)
      fail(location, "Activations-Params: unterminated tuple " + std::to_string(out.size() + 1));
    std::string body = t.substr(i + 1, close - i - 1);
    std::array<std::string, 3> f;
    std::size_t start = 0;
    for (int k = 0; k < 3; ++k) {
      auto comma = body.find(',', start);
      if (k < 2 && comma == std::string::npos)
        fail(location, "Activations-Params: tuple " + std::to_string(out.size() + 1) + " needs 3 fields");
      f[k] = trim(body.substr(start, k < 2 ? comma - start : std::string::npos));
      start = comma + 1;
    }
    if (f[0].size() < 2 || (f[0].front() != '\'' && f[0].front() != '"') || f[0].back() != f[0].front())
      fail(location, "Activations-Params: tuple " + std::to_string(out.size() + 1) + " has no quoted type");
    Tuple tu;
    tu.type = f[0].substr(1, f[0].size() - 2);
    tu.acts = parse_int(f[1], location, "activation count");
    tu.params = parse_int(f[2], location, "parameter count");
    out.push_back(tu);
    i = close + 1;
  }
  if (out.empty()) fail(location, "Activations-Params lists no layers");
  return out;
}

// key:value pairs; values may contain '_' (act:leaky_relu), so a value runs to the next known key.
std::multimap<std::string, std::string> parse_filename(std::string_view fn, const std::string& location) {
  static const std::vector<std::string> keys = {"input_channels", "num_classes", "base_filters",
                                                "input_size", "depth", "arch", "batch", "act",
                                                "dropout", "batchnorm", "input", "output"};
  std::string s(fn);
  if (s.size() > 4 && s.substr(s.size() - 4) == ".out") s.resize(s.size() - 4);
  auto key_at = [&](std::size_t p) -> std::string {
    for (const auto& k : keys)
      if (s.compare(p, k.size(), k) == 0 && p + k.size() < s.size() && s[p + k.size()] == ':') return k;
    return {};
  };
  std::multimap<std::string, std::string> kv;
  std::size_t p = 0;
  while (p < s.size()) {
    std::string k = key_at(p);
    if (k.empty()) fail(location, "filename: unknown field at '" + s.substr(p, 20) + "'");
    std::size_t v = p + k.size() + 1, q = v;
    while (q < s.size() && !(s[q] == '_' && !key_at(q + 1).empty())) ++q;
    kv.emplace(k, s.substr(v, q - v));
    p = q < s.size() ? q + 1 : q;
  }
  return kv;
}

// Every field the filename states must make sense, even those the graph does not use (a row with
// batch:-939 or dropout:2.5 is a damaged row, not a quirk to read past). `dropout` appears twice in
// the generator's names: the rate and the on/off flag.
void check_filename_fields(const std::multimap<std::string, std::string>& kv, const std::string& location) {
  auto is_bool = [](const std::string& v) { return v == "True" || v == "False"; };
  for (auto it = kv.begin(); it != kv.end(); it = kv.upper_bound(it->first)) {
    const std::string& k = it->first;
    const std::size_t n = kv.count(k);
    if (n > (k == "dropout" ? 2u : 1u)) fail(location, "filename field '" + k + ":' appears " + std::to_string(n) + " times");
  }
  for (const auto& [k, v] : kv) {
    const std::string field = "filename field '" + k + ":" + v.substr(0, 30) + "'";
    if (k == "depth") parse_int(v, location, "depth");  // 0 is a generator run that built no layers
    else if (k == "batch" || k == "output" || k == "num_classes" || k == "base_filters") {
      if (parse_int(v, location, k.c_str()) < 1) fail(location, field + " must be at least 1");
    } else if (k == "batchnorm" && !is_bool(v)) fail(location, field + " must be True or False");
    else if (k == "dropout" && !is_bool(v)) {
      char* end = nullptr;
      const double rate = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(rate >= 0 && rate <= 1)) fail(location, field + ": a rate in [0, 1] or True/False");
    } else if (k == "act") {
      try {
        canonical_activation(v);
      } catch (const UserError& e) {
        fail(location, field + ": " + e.what());
      }
    }
  }
}

std::int64_t need_int(const std::multimap<std::string, std::string>& kv, const std::string& key,
                      const std::string& location) {
  auto it = kv.find(key);
  if (it == kv.end()) fail(location, "filename has no '" + key + ":' field");
  return parse_int(it->second, location, key.c_str());
}

// A shape field of the filename, bounded so that products of shapes (H x W, x channels, x the
// batch) stay far inside int64: an image side up to 65 536 pixels, up to 2^20 channels or features.
std::int64_t need_dim(const std::multimap<std::string, std::string>& kv, const std::string& key,
                      const std::string& location, std::int64_t hi) {
  const std::int64_t v = need_int(kv, key, location);
  if (v < 1 || v > hi) fail(location, "filename field '" + key + ":" + std::to_string(v) + "' must be in [1, " + std::to_string(hi) + "]");
  return v;
}

// Channels recovery for a conv with bias: params = (cin*k*k + 1) * cout. One count can have
// several factorisations ((3*9+1)*8 == (3*1+1)*56), so candidates are ranked: widths already seen
// in the network (or the filename's base_filters) are preferred over new ones, the current
// tensor's channels over older ones (a residual block's convs read the block input), and k=3 over
// 1, 5, 7.
struct ConvSolution {
  std::int64_t cin = 0, k = 0, cout = 0;
};
std::optional<ConvSolution> solve_conv(std::int64_t params, std::int64_t cur_c,
                                       std::optional<std::int64_t> known_cout,
                                       const std::vector<std::int64_t>& history, std::int64_t base_filters) {
  static constexpr std::array<std::int64_t, 4> ks = {3, 1, 5, 7};
  // Known output widths: those seen so far and base_filters, but not the image channels (1-4).
  std::vector<std::int64_t> known;
  for (auto h : history)
    if (h > 4) known.push_back(h);
  if (base_filters > 0) known.push_back(base_filters);
  // cin*k*k + 1, or nullopt past int64 (widths come from the row's counts, up to 2^50 each)
  auto per_out = [](std::int64_t cin, std::int64_t k) -> std::optional<std::int64_t> {
    std::int64_t d = 0;
    if (__builtin_mul_overflow(cin, k * k, &d) || __builtin_add_overflow(d, 1, &d)) return std::nullopt;
    return d;
  };
  auto fits = [&](std::int64_t cin, std::int64_t k, std::int64_t cout) {
    if (cin <= 0 || cout <= 0) return false;
    const auto d = per_out(cin, k);
    std::int64_t total = 0;
    return d && !__builtin_mul_overflow(*d, cout, &total) && total == params;
  };
  auto cout_for = [&](std::int64_t cin, std::int64_t k) -> std::int64_t {
    const auto d = per_out(cin, k);
    return d && params % *d == 0 ? params / *d : 0;
  };
  auto cin_for = [&](std::int64_t cout, std::int64_t k) -> std::int64_t {
    if (params % cout) return 0;
    const std::int64_t per = params / cout - 1;
    return per > 0 && per % (k * k) == 0 ? per / (k * k) : 0;
  };
  if (known_cout) {  // the following batch norm states cout
    for (auto k : ks)
      if (fits(cur_c, k, *known_cout)) return ConvSolution{cur_c, k, *known_cout};
    for (auto h : history)
      for (auto k : ks)
        if (fits(h, k, *known_cout)) return ConvSolution{h, k, *known_cout};
    for (auto k : ks)
      if (auto cin = cin_for(*known_cout, k)) return ConvSolution{cin, k, *known_cout};
    return std::nullopt;
  }
  // 1. input the current tensor, output a known width
  for (auto k : ks)
    for (auto c : known)
      if (fits(cur_c, k, c)) return ConvSolution{cur_c, k, c};
  // 3. input the current tensor, new output width: of the kernel sizes that fit, the one whose
  // width changes least (the generators widen or narrow gradually; a 1x1 shortcut that would
  // otherwise read as a 3x3 to a 9x narrower output is the case this settles)
  auto closest = [&](std::int64_t cin) -> std::optional<ConvSolution> {
    std::optional<ConvSolution> best;
    double best_d = 1e300;
    for (auto k : ks)
      if (auto c = cout_for(cin, k)) {
        const double d = std::abs(std::log(static_cast<double>(c) / static_cast<double>(cin)));
        if (d < best_d - 1e-9) {
          best_d = d;
          best = ConvSolution{cin, k, c};
        }
      }
    return best;
  };
  if (auto s = closest(cur_c); s && cur_c > 4 && s->cout * 8 >= cur_c && s->cout <= 8 * cur_c) return s;
  // 2. input an earlier width (residual block input), output a known width
  for (auto h : history)
    for (auto k : ks)
      for (auto c : known)
        if (fits(h, k, c)) return ConvSolution{h, k, c};

  // 4. a known output width (dense blocks keep their growth rate while the input widens)
  for (auto c : known)
    for (auto k : ks)
      if (auto cin = cin_for(c, k)) return ConvSolution{cin, k, c};
  // 5. the current tensor after all (input images), then an earlier width as input
  if (auto s = closest(cur_c)) return s;
  for (auto h : history)
    if (auto s = closest(h)) return s;
  return std::nullopt;
}

}  // namespace

ModelGraph parse_gpumemnet_row(std::string_view filename, std::string_view activations_params,
                               GpuMemNetKind kind, const std::string& location) {
  const auto kv = parse_filename(filename, location);
  check_filename_fields(kv, location);
  const auto tuples = parse_tuples(activations_params, location);
  ModelGraph g;
  g.name = std::string(filename);
  g.source_format = kind == GpuMemNetKind::CNN ? "gpumemnet-cnn" : "gpumemnet-mlp";
  g.family = kind == GpuMemNetKind::CNN ? ModelFamily::CNN : ModelFamily::MLP;
  if (auto it = kv.find("act"); it != kv.end()) g.activation = ascii_lower(it->second);

  if (kind == GpuMemNetKind::MLP) {
    const std::int64_t input = need_dim(kv, "input", location, std::int64_t{1} << 20);
    g.input_shape = {input};
    std::int64_t width = input;
    for (std::size_t i = 0; i < tuples.size(); ++i) {
      const auto& t = tuples[i];
      Layer l = gpumemnet_layer(t.type);
      l.name = std::to_string(i);
      l.params = t.params;
      l.source_activations = t.acts;
      std::int64_t out = t.acts > 0 ? t.acts : width;
      if (l.kind == LayerKind::Linear) {
        if (t.acts <= 0 || t.params % t.acts)
          fail(location, "layer " + std::to_string(i + 1) + " (linear): params " + std::to_string(t.params) +
                             " not a multiple of its width " + std::to_string(t.acts));
        l.in_features = t.params / t.acts - 1;
        l.out_features = t.acts;
      } else if (l.kind == LayerKind::BatchNorm && t.params != 2 * out) {
        fail(location, "layer " + std::to_string(i + 1) + " (batch norm): params " + std::to_string(t.params) +
                           " != 2 x width " + std::to_string(out));
      }
      l.out_shape = {out};
      width = out;
      g.layers.push_back(std::move(l));
    }
  } else {
    std::int64_t channels = need_dim(kv, "input_channels", location, std::int64_t{1} << 20);
    const std::int64_t size = need_dim(kv, "input_size", location, std::int64_t{1} << 16);
    g.input_shape = {channels, size, size};
    std::int64_t hw = size * size;
    std::vector<std::int64_t> history = {channels};  // channel counts seen, most recent first
    const std::int64_t base_filters = kv.count("base_filters") ? need_int(kv, "base_filters", location) : 0;
    // The generator's structure first: it knows the sums and concatenations the row does not list.
    const auto arch = kv.find("arch");
    std::optional<std::vector<Layer>> rebuilt;
    if (arch != kv.end()) rebuilt = rebuild_gpumemnet_cnn(arch->second, tuples, channels, hw);
    if (rebuilt) g.layers = std::move(*rebuilt);
    for (std::size_t i = 0; !rebuilt && i < tuples.size(); ++i) {
      const auto& t = tuples[i];
      Layer l = gpumemnet_layer(t.type);
      l.name = std::to_string(i);
      l.params = t.params;
      l.source_activations = t.acts;
      const std::string where = "layer " + std::to_string(i + 1) + " (" + t.type + ")";
      if (l.kind == LayerKind::Conv) {
        std::optional<std::int64_t> bn_cout;
        if (i + 1 < tuples.size() && ascii_lower(tuples[i + 1].type) == "batch_norm2d") {
          if (tuples[i + 1].params % 2) fail(location, where + ": next batch norm has odd params");
          bn_cout = tuples[i + 1].params / 2;
        }
        auto s = solve_conv(t.params, channels, bn_cout, history, base_filters);
        if (!s) fail(location, where + ": cannot recover channels from params " + std::to_string(t.params));
        l.in_features = s->cin;
        l.out_features = s->cout;
        l.kernel = s->k;
        channels = s->cout;
        hw = t.acts;
        l.out_shape = {channels, hw};
      } else if (l.kind == LayerKind::Linear) {
        if (t.acts <= 0 || t.params % t.acts)
          fail(location, where + ": params not a multiple of its width " + std::to_string(t.acts));
        l.in_features = t.params / t.acts - 1;
        l.out_features = t.acts;
        channels = t.acts;
        hw = 1;
        l.out_shape = {channels};
      } else if (l.kind == LayerKind::Softmax) {
        std::int64_t logits = 0;  // logged with 0 activations: it keeps the logits' shape
        if (__builtin_mul_overflow(channels, hw, &logits)) fail(location, where + ": output larger than 2^63 elements");
        l.out_shape = {logits};
      } else {
        if (l.kind == LayerKind::BatchNorm && t.params != 2 * channels)
          fail(location, where + ": params " + std::to_string(t.params) + " != 2 x channels " +
                             std::to_string(channels));
        if (t.acts > 0) hw = t.acts;
        l.out_shape = hw == 1 && l.kind == LayerKind::AdaptiveAvgPool ? std::vector<std::int64_t>{channels, 1}
                                                                        : std::vector<std::int64_t>{channels, hw};
      }
      if (std::find(history.begin(), history.end(), channels) != history.begin()) {
        history.erase(std::remove(history.begin(), history.end(), channels), history.end());
        history.insert(history.begin(), channels);
      }
      g.layers.push_back(std::move(l));
    }
  }
  try {
    g.finalize();
  } catch (const UserError& e) {  // the size limits: say which row
    fail(location, e.what());
  }
  return g;
}

}  // namespace colo::estimate
