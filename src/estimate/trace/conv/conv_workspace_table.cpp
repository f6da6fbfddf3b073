#include "estimate/trace/conv/conv_workspace_table.h"

#include <cctype>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "core/error.h"
#include "core/one_line.h"
#include "core/parse_number.h"
#include "estimate/input_file.h"
#include "estimate/trace/probe_trace.h"

namespace colo::estimate {

bool valid_conv_key(std::string_view s) {
  if (s.empty() || s.size() > 256) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == ':')) return false;
  return true;
}

ConvWorkspaceTable ConvWorkspaceTable::parse(std::string_view text, const std::string& source) {
  ConvWorkspaceTable t;
  t.source_ = source;
  std::size_t line_no = 0, pos = 0;
  auto fail = [&](std::string_view what) -> void {
    throw UserError(fmt::format("{}:{}: {}", source, line_no, one_line(what)));
  };
  bool have_header = false;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_no == 1) {
      if (line != "colo-conv-workspace 1")
        fail(line.rfind("colo-conv-workspace ", 0) == 0 ? "unsupported table version (this colo reads version 1)"
                                                        : "not a convolution workspace table (first line must be 'colo-conv-workspace 1')");
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("H ", 0) == 0) {
      if (have_header) fail("second header (H)");
      try {
        t.header_ = nlohmann::json::parse(line.substr(2));
      } catch (const nlohmann::json::exception&) {
        fail("H record is not valid JSON");
      }
      if (!t.header_.is_object()) fail("H record must be a JSON object");
      have_header = true;
      continue;
    }
    const std::size_t tab = line.find('\t');
    if (tab == std::string_view::npos) fail("expected '<key><TAB><steps>'");
    const std::string_view key = line.substr(0, tab);
    if (!valid_conv_key(key)) fail(fmt::format("bad convolution key '{}'", key.substr(0, 64)));
    std::vector<ConvWorkspaceStep> steps;
    std::vector<bool> open;  // per transient: allocated and not yet freed
    std::string_view rest = line.substr(tab + 1);
    std::size_t i = 0;
    while (i < rest.size()) {
      while (i < rest.size() && rest[i] == ' ') ++i;
      std::size_t j = i;
      while (j < rest.size() && rest[j] != ' ') ++j;
      if (j == i) break;
      const std::string_view tok = rest.substr(i, j - i);
      i = j;
      ConvWorkspaceStep s;
      if (tok == "o") {
        s.kind = ConvWorkspaceStep::Kind::Output;
      } else if (tok[0] == '+') {
        s.kind = ConvWorkspaceStep::Kind::Alloc;
        s.bytes = parse_unsigned(tok.substr(1), fmt::format("{}:{}: transient bytes", source, line_no), kMaxTraceBytes);
        if (open.size() >= 1024) fail("more than 1024 transients for one key");
        open.push_back(true);
      } else if (tok[0] == '-') {
        s.kind = ConvWorkspaceStep::Kind::Free;
        const auto idx = parse_unsigned(tok.substr(1), fmt::format("{}:{}: transient index", source, line_no), 1023);
        if (idx >= open.size()) fail(fmt::format("free of transient {} that was never allocated", idx));
        if (!open[idx]) fail(fmt::format("transient {} freed twice", idx));
        open[idx] = false;
        s.index = static_cast<std::uint32_t>(idx);
      } else {
        fail(fmt::format("unknown step '{}' (o, +BYTES, -INDEX)", tok.substr(0, 32)));
      }
      steps.push_back(s);
    }
    if (steps.empty()) fail(fmt::format("key '{}' has no steps", key.substr(0, 64)));
    for (std::size_t k = 0; k < open.size(); ++k)
      if (open[k]) fail(fmt::format("transient {} is never freed (an allocation the convolution keeps is an output: 'o')", k));
    if (!t.steps_.emplace(std::string(key), std::move(steps)).second)
      fail(fmt::format("key '{}' listed twice", key.substr(0, 64)));
  }
  if (line_no == 0) throw UserError(source + ": empty file (not a convolution workspace table)");
  if (!have_header) throw UserError(source + ": no header (H)");
  return t;
}

const std::vector<ConvWorkspaceStep>* ConvWorkspaceTable::find(std::string_view key) const {
  auto it = steps_.find(key);
  return it == steps_.end() ? nullptr : &it->second;
}

std::shared_ptr<const ConvWorkspaceTable> load_conv_workspace_table(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const ConvWorkspaceTable>> cache;
  std::lock_guard lock(mu);
  if (auto it = cache.find(path); it != cache.end()) return it->second;
  auto t = std::make_shared<const ConvWorkspaceTable>(
      ConvWorkspaceTable::parse(read_input_file(path, 64ull << 20, "convolution workspace table"), path));
  cache.emplace(path, t);
  return t;
}

}  // namespace colo::estimate
