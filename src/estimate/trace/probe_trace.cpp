#include "estimate/trace/probe_trace.h"

#include <fstream>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>

#include "common/unique_keys_json.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/one_line.h"
#include "core/parse_number.h"
#include "estimate/input_file.h"
#include "estimate/trace/conv/conv_workspace_table.h"

namespace colo::estimate {

std::string_view to_string(TracePhase p) {
  switch (p) {
    case TracePhase::Load: return "load";
    case TracePhase::Forward: return "forward";
    case TracePhase::Backward: return "backward";
    case TracePhase::Optimizer: return "optimizer";
  }
  return "?";
}

namespace {

struct Reader {
  const std::string& source;
  std::size_t line_no = 0;
  std::string where() const { return fmt::format("{}:{}", source, line_no); }
  [[noreturn]] void fail(std::string_view what) const {
    throw UserError(fmt::format("{}: {}", where(), one_line(what)));
  }
};

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

TracePhase parse_phase(std::string_view s, const Reader& r) {
  if (s == "load") return TracePhase::Load;
  if (s == "forward") return TracePhase::Forward;
  if (s == "backward") return TracePhase::Backward;
  if (s == "optimizer") return TracePhase::Optimizer;
  r.fail(fmt::format("unknown phase '{}' (load, forward, backward, optimizer)", s));
}

bool valid_op(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':' || c == '-')) return false;
  return true;
}

}  // namespace

ProbeTrace parse_probe_trace(std::string_view text, const std::string& source) {
  ProbeTrace t;
  t.source = source;
  Reader r{source};
  std::unordered_map<std::uint64_t, std::uint32_t> live;  // trace id -> slot
  std::unordered_map<std::uint64_t, bool> seen;           // every id ever allocated
  std::unordered_map<std::string, std::uint32_t> op_index;
  auto intern = [&](std::string_view op) {
    if (!valid_op(op)) r.fail(fmt::format("bad operator name '{}'", op));
    auto [it, fresh] = op_index.emplace(std::string(op), static_cast<std::uint32_t>(t.ops.size()));
    if (fresh) t.ops.emplace_back(op);
    return it->second;
  };
  std::unordered_map<std::string, std::uint32_t> key_index;
  auto intern_key = [&](std::string_view key) {
    if (!valid_conv_key(key)) r.fail(fmt::format("bad convolution key '{}'", key.substr(0, 64)));
    auto [it, fresh] = key_index.emplace(std::string(key), static_cast<std::uint32_t>(t.conv_keys.size()));
    if (fresh) t.conv_keys.emplace_back(key);
    return it->second;
  };
  auto number = [&](std::string_view s, std::string_view what, std::uint64_t hi) {
    return parse_unsigned(s, fmt::format("{}: {}", r.where(), what), hi);
  };
  bool have_header = false, have_footer = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++r.line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (r.line_no == 1) {
      if (line == "colo-probe-trace 1" || line == "colo-probe-trace 2") {
        t.version = line.back() - '0';
        continue;
      }
      r.fail(line.rfind("colo-probe-trace ", 0) == 0 ? "unsupported trace version (this colo reads versions 1 and 2)"
                                                     : "not a colo probe trace (first line must be 'colo-probe-trace 1' or '2')");
    }
    if (line.empty() || line[0] == '#') continue;
    if (have_footer) r.fail("record after the footer (E)");
    if (line.size() < 2 || line[1] != ' ') r.fail(fmt::format("unknown record '{}'", line.substr(0, 16)));
    const char kind = line[0];
    if (kind == 'H' || kind == 'E') {
      UniqueKeysJson parsed = parse_json_unique_keys(line.substr(2));
      if (parsed.value.is_discarded()) r.fail(fmt::format("{} record is not valid JSON", kind));
      if (parsed.duplicate)  // the second would silently win over the first
        r.fail(fmt::format("{} record: field '{}' given twice", kind, shown_json_key(*parsed.duplicate)));
      nlohmann::json j = std::move(parsed.value);
      if (!j.is_object()) r.fail(fmt::format("{} record must be a JSON object", kind));
      if (kind == 'H') {
        if (have_header) r.fail("second header (H)");
        // The fields colo reads back have their types (a wrong one was an internal error, and
        // "batch": 8.5 read as 8).
        for (const char* key : {"model", "optimizer", "torch", "script", "probe", "amp", "dtype", "foreach", "filename",
                                "alloc_conf", "python"})
          if (j.contains(key) && !j.at(key).is_string()) r.fail(fmt::format("header field '{}': expected a string", key));
        for (const char* key : {"batch", "steps", "data_parallel", "gpus", "torchrun", "gpu_memory_mib", "trace_version"})
          if (j.contains(key) &&
              (!j.at(key).is_number_integer() ||
               (j.at(key).is_number_unsigned() ? j.at(key).get<std::uint64_t>() > (1ULL << 40)
                                                : j.at(key).get<std::int64_t>() < 0 || j.at(key).get<std::int64_t>() > (1LL << 40))))
            r.fail(fmt::format("header field '{}': expected a whole number in 0..2^40", key));
        // A script's probe leaves the batch out (the script chooses it); a stated one is a real batch.
        if (j.contains("batch") && (j.at("batch").get<std::int64_t>() < 1 || j.at("batch").get<std::int64_t>() > limits::kMaxBatch))
          r.fail(fmt::format("header field 'batch': batch size {} is out of range (expected 1..{})",
                             j.at("batch").get<std::int64_t>(), limits::kMaxBatch));
        if (j.contains("alloc_conf")) {
          try {
            t.allocator = parse_allocator_settings(j.at("alloc_conf").get<std::string>(), "allocator settings");
          } catch (const UserError& e) {
            r.fail(fmt::format("header field 'alloc_conf': {}", e.what()));
          }
        }
        t.header = std::move(j);
        have_header = true;
      } else {
        t.footer = std::move(j);
        have_footer = true;
      }
      continue;
    }
    if (!have_header) r.fail("record before the header (H)");
    const auto f = split_fields(line);
    TraceRecord rec;
    switch (kind) {
      case 'M': {
        if (f.size() != 6) r.fail("M record: expected 'M id bytes stream phase op'");
        const auto id = number(f[1], "storage id", UINT64_MAX);
        rec.kind = TraceRecord::Kind::Malloc;
        rec.bytes = number(f[2], "bytes", kMaxTraceBytes);
        rec.stream = static_cast<std::uint16_t>(number(f[3], "stream", 1023));
        rec.phase = parse_phase(f[4], r);
        rec.op = intern(f[5]);
        if (!seen.emplace(id, true).second) r.fail(fmt::format("storage {} allocated twice", id));
        if (t.storages == UINT32_MAX) r.fail("too many storages");
        rec.slot = t.storages++;
        live.emplace(id, rec.slot);
        break;
      }
      case 'F': {
        if (f.size() != 2) r.fail("F record: expected 'F id'");
        const auto id = number(f[1], "storage id", UINT64_MAX);
        auto it = live.find(id);
        if (it == live.end())
          r.fail(seen.count(id) ? fmt::format("storage {} freed twice", id) : fmt::format("free of storage {} that was never allocated", id));
        rec.kind = TraceRecord::Kind::Free;
        rec.slot = it->second;
        live.erase(it);
        break;
      }
      case 'C': {
        if (f.size() != 6 && f.size() != 7) r.fail("C record: expected 'C phase op in_bytes out_bytes strided [key]'");
        rec.kind = TraceRecord::Kind::Conv;
        rec.phase = parse_phase(f[1], r);
        rec.op = intern(f[2]);
        rec.bytes = number(f[3], "input bytes", kMaxTraceBytes);
        rec.out_bytes = number(f[4], "output bytes", kMaxTraceBytes);
        rec.strided = number(f[5], "strided flag", 1) == 1;
        if (f.size() == 7) rec.key = intern_key(f[6]);
        break;
      }
      case 'B': {
        if (f.size() != 3) r.fail("B record: expected 'B phase op'");
        rec.kind = TraceRecord::Kind::Matmul;
        rec.phase = parse_phase(f[1], r);
        rec.op = intern(f[2]);
        break;
      }
      case 'S': {
        if (f.size() != 2) r.fail("S record: expected 'S step'");
        rec.kind = TraceRecord::Kind::Step;
        rec.bytes = number(f[1], "step", 1000);
        if (rec.bytes != static_cast<std::uint64_t>(t.steps) + 1) r.fail(fmt::format("step {} out of order", rec.bytes));
        ++t.steps;
        break;
      }
      case 'X': {
        if (t.version < 2) r.fail("unknown record 'X' (empty_cache records are format version 2)");
        if (f.size() != 2) r.fail("X record: expected 'X phase'");
        rec.kind = TraceRecord::Kind::EmptyCache;
        rec.phase = parse_phase(f[1], r);
        break;
      }
      case 'L': {
        if (t.version < 2) r.fail("unknown record 'L' (memory-fraction records are format version 2)");
        if (f.size() != 2) r.fail("L record: expected 'L fraction'");
        rec.kind = TraceRecord::Kind::MemoryFraction;
        rec.fraction = parse_real(f[1], fmt::format("{}: memory fraction", r.where()), 0, 1);
        break;
      }
      default:
        r.fail(fmt::format("unknown record '{}'", line.substr(0, 1)));
    }
    t.records.push_back(rec);
  }
  if (r.line_no == 0) throw UserError(source + ": empty trace");
  if (!have_header) throw UserError(source + ": trace has no header (H)");
  if (!have_footer) throw UserError(source + ": trace is truncated (no footer E record)");
  if (t.steps == 0) throw UserError(source + ": trace records no optimizer step");
  return t;
}

ProbeTrace load_probe_trace(const std::string& path) {
  return parse_probe_trace(read_input_file(path, 512ull << 20, "probe trace"), path);
}

}  // namespace colo::estimate
