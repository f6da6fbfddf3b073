#include "estimate/allocator/allocator_settings.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"

namespace colo::estimate {

namespace {

constexpr std::uint64_t kMB = 1048576;
constexpr std::uint64_t kMinSplitMB = 20;  // kLargeBuffer / 1 MiB: PyTorch's lower bound for both *_mb options

class Parser {
 public:
  Parser(std::string_view text, std::string_view source) : text_(text), source_(source) {
    std::string buf;
    for (char c : text) {
      if (c == ',' || c == ':' || c == '[' || c == ']') {
        if (!buf.empty()) tokens_.push_back(std::move(buf));
        buf.clear();
        tokens_.emplace_back(1, c);
      } else if (!std::isspace(static_cast<unsigned char>(c))) {
        buf.push_back(c);
      }
    }
    if (!buf.empty()) tokens_.push_back(std::move(buf));
  }

  AllocatorSettings parse() {
    AllocatorSettings s;
    for (i_ = 0; i_ < tokens_.size(); ++i_) {
      const std::string key = tokens_[i_];
      if (key == "max_split_size_mb") {
        s.max_split_size = megabytes(key);
      } else if (key == "max_non_split_rounding_mb") {
        s.max_non_split_rounding = megabytes(key);
      } else if (key == "garbage_collection_threshold") {
        const std::string& v = value(key);
        double x = 0;
        const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);  // stod: trailing text ignored
        if (ec != std::errc() || p == v.data() || !(x > 0 && x < 1))
          fail(fmt::format("garbage_collection_threshold '{}': expected a number between 0 and 1, exclusive", v));
        s.garbage_collection_threshold = x;
      } else if (key == "roundup_power2_divisions") {
        roundup(s);
      } else if (key == "expandable_segments") {
        s.expandable_segments = boolean(key);
      } else if (key == "backend") {
        const std::string& v = value(key);
        if (v == "cudaMallocAsync")
          fail("backend:cudaMallocAsync hands memory to CUDA's own pool allocator, which colo does not model");
        if (v != "native") fail(fmt::format("backend '{}': expected native or cudaMallocAsync", v));
      } else if (key == "release_lock_on_cudamalloc" || key == "pinned_use_cuda_host_register" ||
                 key == "pinned_use_background_threads" || key == "graph_capture_record_stream_reuse") {
        boolean(key);  // locking and pinned host memory: no effect on the GPU's memory
      } else if (key == "pinned_num_register_threads") {
        const std::uint64_t n = integer(key);
        if (!std::has_single_bit(n) || n > 128) fail(fmt::format("{} {}: expected a power of 2 up to 128", key, n));
      } else if (key == "pinned_reserve_segment_size_mb") {
        if (integer(key) == 0) fail(key + " 0: expected more than 0");
      } else if (key == "large_segment_size_mb" || key == "per_process_memory_fraction" ||
                 key == "throw_on_cudamalloc_oom") {
        fail(fmt::format("{} (a newer PyTorch's option) is not modelled", key));
      } else if (key == "pinned_free_catch_all") {
        boolean(key);  // pinned host memory
      } else if (key == "," || key == ":" || key == "[" || key == "]") {
        fail(fmt::format("'{}' where an option's name was expected", key));
      } else {
        fail(fmt::format("unknown option '{}'", key));
      }
      if (i_ + 1 < tokens_.size()) expect(',', "between options");
    }
    return s;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw UserError(fmt::format("{} '{}': {}", source_, text_, what));
  }

  void expect(char c, const char* where) {
    ++i_;
    if (i_ >= tokens_.size() || tokens_[i_] != std::string(1, c))
      fail(fmt::format("expected '{}' {}, found {}", c, where,
                       i_ < tokens_.size() ? "'" + tokens_[i_] + "'" : std::string("the end")));
  }

  const std::string& value(const std::string& key) {
    expect(':', ("after " + key).c_str());
    ++i_;
    if (i_ >= tokens_.size() ||
        (tokens_[i_].size() == 1 && std::string_view(",:[]").find(tokens_[i_][0]) != std::string_view::npos))
      fail(key + ": its value is missing");
    return tokens_[i_];
  }

  std::uint64_t number(const std::string& key, const std::string& v) const {
    // Like PyTorch's stoi/stoul: the leading digits count and what follows is ignored (PyTorch
    // runs "max_split_size_mb:64MB" as 64, so the estimate must too).
    std::uint64_t n = 0;
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || p == v.data())
      fail(fmt::format("{} '{}': expected a whole number{}", key, v,
                       ec == std::errc::result_out_of_range ? " that fits 64 bits" : ""));
    return n;
  }

  std::uint64_t integer(const std::string& key) { return number(key, value(key)); }

  bool boolean(const std::string& key) {
    const std::string& v = value(key);
    if (v != "True" && v != "False") fail(fmt::format("{} '{}': expected True or False", key, v));
    return v == "True";
  }

  std::uint64_t megabytes(const std::string& key) {
    const std::uint64_t mb = integer(key);
    if (mb < kMinSplitMB) fail(fmt::format("{} {}: too small, must be at least {}", key, mb, kMinSplitMB));
    return std::min(mb, std::numeric_limits<std::uint64_t>::max() / kMB) * kMB;
  }

  std::uint32_t divisions(const std::string& v, bool zero_allowed) const {
    const std::uint64_t d = number("roundup_power2_divisions", v);
    if (!(zero_allowed && d == 0) && (!std::has_single_bit(d) || d > (1u << 30)))
      fail(fmt::format("roundup_power2_divisions {}: divisions must be a power of 2{}", d,
                       zero_allowed ? " (or 0 to disable)" : ""));
    return static_cast<std::uint32_t>(d);
  }

  void roundup(AllocatorSettings& s) {
    expect(':', "after roundup_power2_divisions");
    ++i_;
    if (i_ >= tokens_.size()) fail("roundup_power2_divisions: its value is missing");
    auto& div = s.roundup_power2_divisions;
    if (tokens_[i_] != "[") {  // one value for every size
      div.fill(divisions(tokens_[i_], false));
      return;
    }
    bool first = true;
    std::size_t last = 0;  // ">" fills the intervals above the last one named
    while (++i_ < tokens_.size() && tokens_[i_] != "]") {
      const std::string interval = tokens_[i_];
      expect(':', ("after interval " + interval).c_str());
      ++i_;
      if (i_ >= tokens_.size()) fail(fmt::format("roundup_power2_divisions: interval {} has no divisions", interval));
      const std::uint32_t d = divisions(tokens_[i_], true);
      if (interval == ">") {
        // As PyTorch's AllocatorConfig does from last_index + 1 (older 2.x releases also
        // overwrote the interval named last; its own tests now pin the newer rule).
        std::fill(div.begin() + static_cast<std::ptrdiff_t>(last + 1), div.end(), d);
      } else {
        const std::uint64_t mb = number("roundup_power2_divisions interval", interval);
        if (!std::has_single_bit(mb))
          fail(fmt::format("roundup_power2_divisions interval {}: intervals must be powers of 2 (MiB)", interval));
        const std::size_t index = std::min<std::size_t>(static_cast<std::size_t>(std::bit_width(mb) - 1), div.size() - 1);
        if (first) std::fill(div.begin(), div.begin() + static_cast<std::ptrdiff_t>(index), d);
        first = false;
        div[index] = d;
        last = index;
      }
      if (i_ + 1 < tokens_.size() && tokens_[i_ + 1] != "]") expect(',', "between intervals");
    }
    if (i_ >= tokens_.size()) fail("roundup_power2_divisions: the list has no closing ']'");
  }

  std::string_view text_;
  std::string_view source_;
  std::vector<std::string> tokens_;
  std::size_t i_ = 0;
};

}  // namespace

bool AllocatorSettings::is_default() const { return describe().empty(); }

std::string AllocatorSettings::describe() const {
  std::vector<std::string> parts;
  if (expandable_segments) parts.emplace_back("expandable_segments:True");
  if (max_split_size != std::numeric_limits<std::uint64_t>::max())
    parts.push_back(fmt::format("max_split_size_mb:{}", max_split_size / kMB));
  if (max_non_split_rounding != 20971520)
    parts.push_back(fmt::format("max_non_split_rounding_mb:{}", max_non_split_rounding / kMB));
  if (std::any_of(roundup_power2_divisions.begin(), roundup_power2_divisions.end(), [](auto d) { return d > 1; })) {
    std::string list;
    for (std::size_t i = 0; i < roundup_power2_divisions.size(); ++i)
      list += fmt::format("{}{}:{}", i ? "," : "", 1ull << i, roundup_power2_divisions[i]);
    parts.push_back("roundup_power2_divisions:[" + list + "]");
  }
  if (garbage_collection_threshold > 0)
    parts.push_back(fmt::format("garbage_collection_threshold:{}", garbage_collection_threshold));
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

AllocatorSettings parse_allocator_settings(std::string_view text, std::string_view source) {
  return Parser(text, source).parse();
}

std::optional<AllocatorConfVariable> allocator_conf_variable(const std::function<const char*(const char*)>& lookup) {
  for (const char* name : {"PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"})
    if (const char* v = lookup(name); v && *v) return AllocatorConfVariable{name, v, parse_allocator_settings(v, name)};
  return std::nullopt;
}

std::optional<AllocatorConfVariable> allocator_conf_from_environment() {
  return allocator_conf_variable([](const char* name) { return std::getenv(name); });
}

}  // namespace colo::estimate
