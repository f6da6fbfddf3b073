#pragma once
// A small reader for the comma-separated files colo imports (workload catalogs, submission
// traces). It keeps each row's line number so that every complaint reads "FILE:LINE: problem".
// No quoting: none of the files we read need it, and a quote character is rejected rather
// than mis-read.
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace colo::sim {

class CsvTable {
 public:
  struct Row {
    int line = 0;
    std::vector<std::string> cells;
  };

  // Reads `path`; throws colo::UserError for an unreadable file, one over limits::kMaxDataBytes,
  // an empty file, a quote character, a column named twice in the header, or a row whose cell
  // count differs from the header's.
  static CsvTable read(const std::string& path);
  // Same, from text already in memory (tests); `path` is only used in messages.
  static CsvTable parse(std::string_view text, const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<Row>& rows() const { return rows_; }

  // Index of a column; throws "FILE:1: missing column 'name'" when absent.
  std::size_t require(std::string_view column) const;
  std::optional<std::size_t> find(std::string_view column) const;
  // Throws "FILE:1: unknown column 'X' (known: …)" for a header column no require() or find() asked
  // for: a misspelt optional column would otherwise be silently ignored, its values never used.
  void reject_unasked_columns() const;

  // Cell accessors with one-line errors "FILE:LINE: column 'NAME': …" (core/parse_number.h);
  // a value outside [lo, hi] is an error, never clamped.
  static constexpr double kAny = std::numeric_limits<double>::max();
  const std::string& text(const Row& r, std::size_t col) const { return r.cells[col]; }
  double number(const Row& r, std::size_t col, double lo = -kAny, double hi = kAny) const;  // finite number
  std::optional<double> optional_number(const Row& r, std::size_t col, double lo = -kAny,
                                        double hi = kAny) const;                            // empty → nullopt
  // Whole number ("64" or "64.0"); the default range is what a double holds exactly.
  long long integer(const Row& r, std::size_t col, long long lo = -(1LL << 53), long long hi = 1LL << 53) const;
  std::string where(const Row& r) const;                              // "FILE:LINE"
  std::string where(const Row& r, std::size_t col) const;             // "FILE:LINE: column 'NAME'"

 private:
  std::string path_;
  std::vector<std::string> header_;
  std::vector<Row> rows_;
  mutable std::vector<std::string> asked_;  // the columns require() and find() were asked for, in order
};

}  // namespace colo::sim
