#include "sim/workloads/csv_table.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/limits.h"
#include "core/parse_number.h"
#include "core/utf8.h"
#include "core/one_line.h"
#include "estimate/input_file.h"

namespace colo::sim {

namespace {

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> split(std::string_view line) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = line.find(',', start);
    out.push_back(trim(line.substr(start, comma == std::string_view::npos ? line.size() - start : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

CsvTable CsvTable::read(const std::string& path) {
  return parse(estimate::read_input_file(path, limits::kMaxDataBytes, "CSV file"), path);
}

CsvTable CsvTable::parse(std::string_view text, const std::string& path) {
  CsvTable t;
  t.path_ = path;
  int line_no = 0;
  size_t pos = 0;
  bool have_header = false;
  while (pos <= text.size()) {
    const size_t nl = text.find('\n', pos);
    const std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.size() - pos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    if (trim(line).empty()) continue;
    if (line.find('"') != std::string_view::npos)
      throw UserError(fmt::format("{}:{}: quoted fields are not supported", path, line_no));
    std::vector<std::string> cells = split(line);
    // Cells end up in JSON output (names), which must be UTF-8.
    for (size_t i = 0; i < cells.size(); ++i)
      if (!is_valid_utf8(cells[i])) {
        if (!have_header) throw UserError(fmt::format("{}:{}: header column {}: not valid UTF-8", path, line_no, i + 1));
        throw UserError(fmt::format("{}:{}: column '{}': not valid UTF-8", path, line_no,
                                    i < t.header_.size() ? one_line(t.header_[i]) : std::to_string(i + 1)));
      }
    if (!have_header) {
      // A repeated name would make find() silently pick one of the two columns.
      for (size_t i = 0; i < cells.size(); ++i)
        for (size_t j = 0; j < i; ++j)
          if (cells[i] == cells[j])
            throw UserError(fmt::format("{}:{}: column '{}' appears twice in the header (columns {} and {})", path,
                                        line_no, one_line(cells[i]), j + 1, i + 1));
      t.header_ = std::move(cells);
      have_header = true;
      continue;
    }
    if (cells.size() != t.header_.size())
      throw UserError(fmt::format("{}:{}: {} fields, the header has {}", path, line_no, cells.size(),
                                  t.header_.size()));
    t.rows_.push_back({line_no, std::move(cells)});
  }
  if (!have_header) throw UserError(fmt::format("{}: empty file (no header)", path));
  return t;
}

std::optional<std::size_t> CsvTable::find(std::string_view column) const {
  if (std::find(asked_.begin(), asked_.end(), column) == asked_.end()) asked_.emplace_back(column);
  for (size_t i = 0; i < header_.size(); ++i)
    if (header_[i] == column) return i;
  return std::nullopt;
}

std::size_t CsvTable::require(std::string_view column) const {
  if (auto i = find(column)) return *i;
  throw UserError(fmt::format("{}:1: missing column '{}'", path_, column));
}

void CsvTable::reject_unasked_columns() const {
  for (const std::string& h : header_)
    if (std::find(asked_.begin(), asked_.end(), h) == asked_.end())
      throw UserError(fmt::format("{}:1: unknown column '{}' (known: {})", path_, one_line(h), fmt::join(asked_, ", ")));
}

std::string CsvTable::where(const Row& r) const { return fmt::format("{}:{}", path_, r.line); }

std::string CsvTable::where(const Row& r, std::size_t col) const { return cell_location(path_, r.line, header_[col]); }

std::optional<double> CsvTable::optional_number(const Row& r, std::size_t col, double lo, double hi) const {
  const std::string& s = r.cells[col];
  if (s.empty()) return std::nullopt;
  return parse_real(s, where(r, col), lo, hi);
}

double CsvTable::number(const Row& r, std::size_t col, double lo, double hi) const {
  if (auto v = optional_number(r, col, lo, hi)) return *v;
  throw UserError(fmt::format("{}: column '{}' is empty", where(r), header_[col]));
}

long long CsvTable::integer(const Row& r, std::size_t col, long long lo, long long hi) const {
  if (r.cells[col].empty()) throw UserError(fmt::format("{}: column '{}' is empty", where(r), header_[col]));
  return parse_whole(r.cells[col], where(r, col), lo, hi);
}

}  // namespace colo::sim
