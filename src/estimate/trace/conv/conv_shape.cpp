#include "estimate/trace/conv/conv_shape.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace colo::estimate {

namespace {

constexpr std::uint64_t kMaxDim = std::uint64_t{1} << 40;

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

// "128x64x56x56" (after `prefix`): numbers in [min_value, 2^40].
bool dims(std::string_view field, std::string_view prefix, std::uint64_t min_value, std::vector<std::uint64_t>& out) {
  if (field.substr(0, prefix.size()) != prefix) return false;
  out.clear();
  for (std::string_view part : split(field.substr(prefix.size()), 'x')) {
    if (part.empty() || part.size() > 13) return false;
    std::uint64_t v = 0;
    for (char c : part) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (v < min_value || v > kMaxDim) return false;
    out.push_back(v);
  }
  return true;
}

std::uint64_t saturating_product(const std::vector<std::uint64_t>& v, std::size_t from = 0) {
  std::uint64_t p = 1;
  for (std::size_t i = from; i < v.size(); ++i)
    if (__builtin_mul_overflow(p, v[i], &p)) return std::numeric_limits<std::uint64_t>::max();
  return p;
}

std::uint64_t saturating_bytes(std::uint64_t elements, std::uint64_t element_bytes) {
  std::uint64_t b = 0;
  return __builtin_mul_overflow(elements, element_bytes, &b) ? std::numeric_limits<std::uint64_t>::max() : b;
}

// One value per spatial dimension: the key may give one for all.
bool per_dim(std::vector<std::uint64_t>& v, std::size_t n) {
  if (v.size() == 1 && n > 1) v.assign(n, v[0]);
  return v.size() == n;
}

}  // namespace

std::optional<ConvShape> parse_conv_shape(std::string_view key, std::string* why) {
  auto fail = [&](std::string_view what) -> std::optional<ConvShape> {
    if (why) *why = std::string(what);
    return std::nullopt;
  };
  const auto f = split(key, ':');
  if (f.size() != 10) return fail("not 10 ':'-separated fields");
  ConvShape s;
  if (f[0] != "f" && f[0] != "b") return fail("pass is not 'f' or 'b'");
  s.backward = f[0] == "b";
  if (!dims(f[1], "", 1, s.input) || s.input.size() < 3 || s.input.size() > 5)
    return fail("input shape is not N x C x 1-3 spatial sizes, each in [1, 2^40]");
  const std::size_t n = s.input.size() - 2;
  if (!dims(f[2], "", 1, s.weight) || s.weight.size() != s.input.size())
    return fail("weight shape does not match the input's rank");
  if (!dims(f[3], "s", 1, s.stride) || !per_dim(s.stride, n)) return fail("bad stride");
  if (!dims(f[4], "p", 0, s.padding) || !per_dim(s.padding, n)) return fail("bad padding");
  if (!dims(f[5], "d", 1, s.dilation) || !per_dim(s.dilation, n)) return fail("bad dilation");
  std::vector<std::uint64_t> g;
  if (!dims(f[6], "g", 1, g) || g.size() != 1) return fail("bad groups");
  s.groups = g[0];
  if (f[7] == "t0") {
    s.output_padding.assign(n, 0);
  } else {
    s.transposed = true;
    if (!dims(f[7], "t1o", 0, s.output_padding) || !per_dim(s.output_padding, n)) return fail("bad transposed field");
  }
  s.dtype = std::string(f[8]);
  if (s.dtype == "float32") s.element_bytes = 4;
  else if (s.dtype == "float16" || s.dtype == "bfloat16") s.element_bytes = 2;
  else if (s.dtype == "float64") s.element_bytes = 8;
  else return fail("dtype is not float32, float16, bfloat16 or float64");
  const std::string_view last = f[9];
  if (s.backward) {
    if (last.size() < 2 || last.size() > 4 || last[0] != 'm' ||
        last.substr(1).find_first_not_of("01") != std::string_view::npos)
      return fail("backward key does not end in an output mask (m111)");
    s.computes_input_grad = last[1] == '1';
  } else if (last != "b0" && last != "b1") {
    return fail("forward key does not end in b0 or b1");
  }
  // Channels as PyTorch checks them: weight [out, in/groups, k...], transposed [in, out/groups, k...].
  const std::uint64_t c_in = s.input[1];
  std::uint64_t per_group = 0, c_out = 0;
  if (s.transposed) {
    if (s.weight[0] != c_in || __builtin_mul_overflow(s.weight[1], s.groups, &c_out))
      return fail("weight channels do not match the input");
  } else if (__builtin_mul_overflow(s.weight[1], s.groups, &per_group) || per_group != c_in ||
             s.weight[0] % s.groups != 0) {
    return fail("weight channels do not match the input and groups");
  } else {
    c_out = s.weight[0];
  }
  s.output = {s.input[0], c_out};
  for (std::size_t i = 0; i < n; ++i) {
    // Every term is below 2^41 except dilation x (kernel - 1), below 2^80: in long double the sizes
    // stay exact up to 2^64, and any past 2^40 is refused.
    const long double in = static_cast<long double>(s.input[2 + i]), k = static_cast<long double>(s.weight[2 + i]);
    const long double st = static_cast<long double>(s.stride[i]), p = static_cast<long double>(s.padding[i]);
    const long double d = static_cast<long double>(s.dilation[i]);
    const long double out = s.transposed ? (in - 1) * st - 2 * p + d * (k - 1) + static_cast<long double>(s.output_padding[i]) + 1
                                         : std::floor((in + 2 * p - d * (k - 1) - 1) / st) + 1;
    if (!(out >= 1) || out > static_cast<long double>(kMaxDim)) return fail("the output would be empty");
    s.output.push_back(static_cast<std::uint64_t>(out));
  }
  return s;
}

std::uint64_t ConvShape::base_bytes() const {
  const std::uint64_t e = std::max({saturating_product(input), saturating_product(output), saturating_product(weight)});
  return saturating_bytes(e, element_bytes);
}

std::string ConvShape::workspace_class() const {
  bool strided = false, one = true;
  for (auto v : stride) strided = strided || v > 1;
  for (std::size_t i = 2; i < weight.size(); ++i) one = one && weight[i] == 1;
  const char* kind = groups > 1 ? "grouped" : strided ? "strided" : one ? "1x1" : "other";
  return fmt::format("{}:{}:{}:{}{}", backward ? "b" : "f", dtype, transposed ? "t1" : "t0", kind,
                     backward && !computes_input_grad ? ":no-input-grad" : "");
}

std::array<double, 5> ConvShape::features() const {
  auto lg = [](std::uint64_t v) { return std::log2(static_cast<double>(v)); };
  return {lg(input[0]), lg(input[1]), lg(output[1]), lg(saturating_product(input, 2)), lg(saturating_product(weight, 2))};
}

}  // namespace colo::estimate
