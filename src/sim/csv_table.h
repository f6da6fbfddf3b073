#pragma once
// A small reader for the comma-separated files colo imports (workload catalogs, submission
// traces). It keeps each row's line number so that every complaint reads "FILE:LINE: problem".
// No quoting: none of the files we read need it, and a quote character is rejected rather
// than mis-read.
#include <cstddef>
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

  // Reads `path`; throws colo::UserError for an unreadable file, an empty file, a quote
  // character, or a row whose cell count differs from the header's.
  static CsvTable read(const std::string& path);
  // Same, from text already in memory (tests); `path` is only used in messages.
  static CsvTable parse(std::string_view text, const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<Row>& rows() const { return rows_; }

  // Index of a column; throws "FILE:1: missing column 'name'" when absent.
  std::size_t require(std::string_view column) const;
  std::optional<std::size_t> find(std::string_view column) const;

  // Cell accessors with one-line, located errors.
  const std::string& text(const Row& r, std::size_t col) const { return r.cells[col]; }
  double number(const Row& r, std::size_t col) const;                 // finite number
  std::optional<double> optional_number(const Row& r, std::size_t col) const;  // empty → nullopt
  long long integer(const Row& r, std::size_t col) const;             // whole number
  std::string where(const Row& r) const;                              // "FILE:LINE"

 private:
  std::string path_;
  std::vector<std::string> header_;
  std::vector<Row> rows_;
};

}  // namespace colo::sim
