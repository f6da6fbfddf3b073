#include "estimate/evaluation/dataset.h"
#include "estimate/graph/summary_file.h"

#include <filesystem>
#include <fstream>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/limits.h"
#include "core/parse_number.h"
#include "core/utf8.h"
#include "core/one_line.h"
#include "estimate/input_file.h"
#include "estimate/graph/parsers.h"

namespace colo::estimate {

DatasetFormat parse_dataset_format(const std::string& s) {
  if (s == "gpumemnet-mlp") return DatasetFormat::GpuMemNetMLP;
  if (s == "gpumemnet-cnn") return DatasetFormat::GpuMemNetCNN;
  if (s == "carma-workloads") return DatasetFormat::CarmaWorkloads;
  throw UserError("unknown dataset format '" + s + "' (expected gpumemnet-mlp, gpumemnet-cnn or carma-workloads)");
}

Split parse_split(const std::string& s) {
  if (s == "all") return Split::All;
  if (s == "train") return Split::Train;
  if (s == "test") return Split::Test;
  throw UserError("unknown split '" + s + "' (expected all, train or test)");
}

bool in_train_split(const std::string& key) {
  // FNV-1a-style hash. The offset basis is one digit short of FNV's standard 14695981039346656037;
  // the split is what this function computes, and the calibration profile and the GPUMemNet models
  // were fitted on it, so "fixing" the constant means re-running every fit and retraining.
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h % 10 < 8;
}

namespace {

// RFC 4180 records: quoted fields may hold commas, quotes ("") and newlines. A quote still open
// at the end of the file is an error at the line where its record starts.
bool read_record(std::istream& in, std::vector<std::string>& fields, std::size_t& line, const std::string& path) {
  const std::size_t first_line = line + 1;
  fields.clear();
  std::string f;
  bool quoted = false, any = false;
  char c;
  while (in.get(c)) {
    any = true;
    if (quoted) {
      if (c == '"') {
        if (in.peek() == '"') {
          in.get(c);
          f += '"';
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        f += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(f));
      f.clear();
    } else if (c == '\n') {
      ++line;
      fields.push_back(std::move(f));
      return true;
    } else if (c != '\r') {
      f += c;
    }
  }
  if (!any) return false;
  if (quoted) throw UserError(path + ":" + std::to_string(first_line) + ": unterminated quote");
  fields.push_back(std::move(f));
  return true;
}

// Cells end up in JSON output (ids, names), which must be UTF-8.
void check_utf8(const std::vector<std::string>& rec, const std::vector<std::string>& header, const std::string& loc) {
  for (std::size_t i = 0; i < rec.size(); ++i)
    if (!is_valid_utf8(rec[i]))
      throw UserError(&rec == &header ? loc + ": header column " + std::to_string(i + 1) + ": not valid UTF-8"
                                      : loc + ": column '" + one_line(header[i]) + "': not valid UTF-8");
}

// The next non-blank record, checked to have the header's field count; returns its location
// ("FILE:LINE") or nullopt at the end of the file.
std::optional<std::string> next_record(std::istream& in, std::vector<std::string>& rec, std::size_t& line,
                                       const std::vector<std::string>& header, const std::string& path) {
  const std::size_t fields = header.size();
  while (true) {
    const std::size_t rec_line = line + 1;
    if (!read_record(in, rec, line, path)) return std::nullopt;
    if (rec.size() == 1 && rec[0].empty()) continue;
    std::string loc = path + ":" + std::to_string(rec_line);
    if (rec.size() != fields)
      throw UserError(loc + ": expected " + std::to_string(fields) + " fields, found " + std::to_string(rec.size()));
    check_utf8(rec, header, loc);
    return loc;
  }
}


// A whole-number cell in [lo, hi] ("64" or "64.0"); errors read "FILE:LINE: column 'NAME': …".
std::int64_t to_int(const std::string& s, const std::string& loc, const std::string& col, std::int64_t lo,
                    std::int64_t hi) {
  return parse_whole(s, loc + ": column '" + col + "'", lo, hi);
}

// Column name → index; a repeated name would make one of the two columns silently win.
std::map<std::string, std::size_t> columns(const std::vector<std::string>& header, const std::string& path) {
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i)
    if (auto [it, fresh] = col.emplace(header[i], i); !fresh)
      throw UserError(path + ":1: column '" + one_line(header[i]) + "' appears twice in the header (columns " +
                      std::to_string(it->second + 1) + " and " + std::to_string(i + 1) + ")");
  return col;
}

}  // namespace

std::vector<DatasetRow> load_dataset(const std::string& path, DatasetFormat fmt, Split split) {
  std::istringstream in(read_input_file(path, limits::kMaxDataBytes, "data set"));
  if (fmt == DatasetFormat::CarmaWorkloads && split == Split::Train)
    throw UserError(path + ": the carma workloads are held out: there is no train split");
  std::vector<std::string> header, rec;
  std::size_t line = 0;
  if (!read_record(in, header, line, path)) throw UserError(path + ":1: empty data set");
  check_utf8(header, header, path + ":1");
  const std::map<std::string, std::size_t> col = columns(header, path);
  auto need = [&](const std::string& name) {
    auto it = col.find(name);
    if (it == col.end()) throw UserError(path + ":1: missing column '" + name + "'");
    return it->second;
  };
  std::vector<DatasetRow> rows;
  // Each row is one measured model: a repeat would count twice in every statistic (and a GPUMemNet
  // filename decides its row's split, so both copies land on the same side).
  std::map<std::string, std::string> first_at;
  auto once = [&](const std::string& id, const std::string& loc, const char* column) {
    const auto [it, fresh] = first_at.emplace(id, loc);
    if (!fresh)
      throw UserError(fmt::format("{}: column '{}': '{}' repeats the row at {}", loc, column,
                                  one_line(id.substr(0, 200)), it->second));
  };
  if (fmt == DatasetFormat::CarmaWorkloads) {
    const auto c_name = need("workload"), c_batch = need("batch_size"), c_gpus = need("gpus"),
               c_meas = need("measured_mib"), c_sum = need("summary"), c_opt = need("optimizer"),
               c_seq = need("seq_len"), c_model = need("model"), c_data = need("dataset");
    const auto dir = std::filesystem::path(path).parent_path() / "summaries";
    std::map<std::string, std::shared_ptr<const ModelGraph>> cache;
    while (true) {
      const auto at = next_record(in, rec, line, header, path);
      if (!at) break;
      const std::string& loc = *at;
      DatasetRow r;
      r.id = rec[c_name];
      r.location = loc;
      r.model = rec[c_model];
      r.data = rec[c_data];
      r.batch = to_int(rec[c_batch], loc, "batch_size", 1, limits::kMaxBatch);
      r.gpus = static_cast<int>(to_int(rec[c_gpus], loc, "gpus", 1, 1024));
      if (!rec[c_meas].empty()) r.measured = to_int(rec[c_meas], loc, "measured_mib", 1, limits::kMaxGpuMiB);
      if (!rec[c_opt].empty()) {
        try {
          r.optimizer = parse_optimizer(rec[c_opt]);
        } catch (const UserError& e) {
          throw UserError(loc + ": column 'optimizer': " + e.what());
        }
      }
      const std::int64_t seq = rec[c_seq].empty() ? 0 : to_int(rec[c_seq], loc, "seq_len", 1, limits::kMaxSeqLen);
      r.seq_len = seq;
      const std::string file = rec[c_sum];
      std::optional<std::filesystem::path> found;
      try {
        found = find_summary_file(dir, file);
      } catch (const UserError& e) {
        throw UserError(loc + ": " + e.what());
      }
      if (!found) throw UserError(loc + ": summary '" + file + "' not found in " + dir.string());
      const std::filesystem::path p = *found;
      const std::string key = p.string() + "#" + std::to_string(seq);
      auto it = cache.find(key);
      if (it == cache.end()) it = cache.emplace(key, std::make_shared<ModelGraph>(load_summary(p.string(), seq))).first;
      r.graph = it->second;
      once(r.id, loc, "workload");
      if (split == Split::Test || split == Split::All) rows.push_back(std::move(r));
    }
    if (rows.empty()) throw UserError(path + ": no data rows (only a header)");
    return rows;
  }
  const bool cnn = fmt == DatasetFormat::GpuMemNetCNN;
  const auto c_file = need("Filename"), c_ap = need("Activations-Params"), c_batch = need("Batch Size"),
             c_mem = need("Max GPU Memory (MiB)");
  const auto st = col.find("Status");
  while (true) {
    const auto at = next_record(in, rec, line, header, path);
    if (!at) break;
    const std::string& loc = *at;
    DatasetRow r;
    r.id = rec[c_file];
    r.location = loc;
    r.batch = to_int(rec[c_batch], loc, "Batch Size", 1, limits::kMaxBatch);
    // The filename states the batch too; two answers mean a damaged row.
    for (std::size_t b = r.id.find("batch:"); b != std::string::npos; b = r.id.find("batch:", b + 1)) {
      if (b > 0 && r.id[b - 1] != '_') continue;
      std::size_t end = b + 6;
      while (end < r.id.size() && std::isdigit(static_cast<unsigned char>(r.id[end]))) ++end;
      if (r.id.substr(b + 6, end - b - 6) != std::to_string(r.batch))
        throw UserError(fmt::format("{}: column 'Batch Size' is {} but the filename says '{}'", loc, r.batch,
                                    one_line(r.id.substr(b, std::min<std::size_t>(end - b, 30)))));
    }
    const std::int64_t mem = to_int(rec[c_mem], loc, "Max GPU Memory (MiB)", 0, limits::kMaxGpuMiB);
    if (mem > 0) r.measured = mem;  // 0 = not recorded
    if (st != col.end()) {
      const std::string& status = rec[st->second];
      if (status != "SUCCESSFUL" && status != "OOM_CRASH")
        throw UserError(fmt::format("{}: column 'Status': '{}' is neither SUCCESSFUL nor OOM_CRASH", loc, one_line(status)));
      r.oom = status == "OOM_CRASH";
    }
    // A few generator runs built no layers at all (Depth 0, "[]"): no model to estimate; they
    // are kept without a graph and counted as skipped.
    if (rec[c_ap] != "[]")
      r.graph = std::make_shared<ModelGraph>(
          parse_gpumemnet_row(rec[c_file], rec[c_ap], cnn ? GpuMemNetKind::CNN : GpuMemNetKind::MLP, loc));
    once(r.id, loc, "Filename");
    // Every row is checked, the other split's too: a damaged file fails whichever half is asked for.
    const bool train = in_train_split(r.id);
    if ((split == Split::Train && !train) || (split == Split::Test && train)) continue;
    rows.push_back(std::move(r));
  }
  // A header-only file (or a split that selects nothing) would give n = 0 and "success".
  if (rows.empty()) throw UserError(path + ": no data rows" + (split == Split::All ? std::string(" (only a header)") : " in this split"));
  return rows;
}

}  // namespace colo::estimate
