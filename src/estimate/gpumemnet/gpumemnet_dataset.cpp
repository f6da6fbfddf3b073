#include "estimate/gpumemnet/gpumemnet_dataset.h"

#include <sstream>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "core/limits.h"
#include "core/utf8.h"
#include "core/parse_number.h"
#include "core/one_line.h"
#include "estimate/input_file.h"
#include "estimate/evaluation/dataset.h"

namespace colo::estimate {

GpuMemNetFamily parse_gpumemnet_family(std::string_view format) {
  if (format == "gpumemnet-mlp") return GpuMemNetFamily::MLP;
  if (format == "gpumemnet-cnn") return GpuMemNetFamily::CNN;
  throw UserError(fmt::format("gpumemnet: format '{}' is not gpumemnet-mlp or gpumemnet-cnn", format));
}

std::string_view to_string(GpuMemNetFamily f) { return f == GpuMemNetFamily::MLP ? "mlp" : "cnn"; }

bool in_test_split(std::string_view filename) { return !in_train_split(std::string(filename)); }

namespace {

// Splits one CSV record (RFC 4180 quoting: "" inside quotes is a quote). Returns false when a
// quoted field is still open at the end of `text`, i.e. the record continues on the next line.
bool split_csv(const std::string& text, std::vector<std::string>& fields) {
  fields.assign(1, "");
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        fields.back().push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back().push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back().push_back(c);
    }
  }
  return !quoted;
}

// Cells go through core/parse_number.h: errors read "FILE:LINE: column 'NAME': …", and a value
// like 9e300 is out of range instead of reaching an undefined double → int64 conversion.
double number(const std::string& s, const std::string& where, std::string_view column, double hi) {
  return parse_real(s, fmt::format("{}: column '{}'", where, column), 0, hi);
}

std::int64_t integer(const std::string& s, const std::string& where, std::string_view column, std::int64_t hi) {
  return parse_whole(s, fmt::format("{}: column '{}'", where, column), 0, hi);
}

// Counts layer types in "[('linear', 936, 1754064), ('Softplus', 936, 0), ...]".
void count_layers(const std::string& list, const std::string& where, GpuMemNetInputs& in) {
  std::size_t pos = 0, tuples = 0;
  while ((pos = list.find("('", pos)) != std::string::npos) {
    const std::size_t end = list.find('\'', pos + 2);
    if (end == std::string::npos) throw UserError(fmt::format("{}: unterminated layer name in Activations-Params", where));
    const std::string type = list.substr(pos + 2, end - pos - 2);
    if (type == "linear") ++in.linear;
    else if (type == "conv2d") ++in.conv;
    else if (type == "batch_normalization" || type == "batch_norm2d") ++in.batchnorm;
    else if (type == "dropout") ++in.dropout;
    ++tuples;
    pos = end;
  }
  if (tuples == 0) throw UserError(fmt::format("{}: Activations-Params lists no layers", where));
}

}  // namespace

GpuMemNetDataset load_gpumemnet_dataset(const std::string& path, GpuMemNetFamily family) {
  std::istringstream in(read_input_file(path, limits::kMaxDataBytes, "GPUMemNet dataset"));
  std::string line, record;
  std::vector<std::string> fields;
  int line_no = 0;
  if (!std::getline(in, line)) throw UserError(fmt::format("{}:1: empty file", path));
  ++line_no;
  if (!split_csv(line, fields)) throw UserError(fmt::format("{}:1: unterminated quote in the header", path));
  for (std::size_t i = 0; i < fields.size(); ++i)
    if (!is_valid_utf8(fields[i])) throw UserError(fmt::format("{}:1: header column {}: not valid UTF-8", path, i + 1));
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < fields.size(); ++i)
    if (auto [it, fresh] = col.emplace(fields[i], i); !fresh)
      throw UserError(fmt::format("{}:1: column '{}' appears twice in the header (columns {} and {})", path, one_line(fields[i]),
                                  it->second + 1, i + 1));
  std::vector<std::string> needed = {"Filename",         "Activations-Params", "Activation Function",
                                     "Total Activations", "Total Parameters",   "Batch Size",
                                     "Max GPU Memory (MiB)"};
  if (family == GpuMemNetFamily::CNN) needed.push_back("Status");
  for (const auto& n : needed) {
    if (!col.count(n)) {
      throw UserError(fmt::format("{}:1: no '{}' column; is this a {} GPUMemNet dataset?", path, n, to_string(family)));
    }
  }
  GpuMemNetDataset ds;
  std::map<std::string, int> first_at;  // Filename -> its line
  while (std::getline(in, line)) {
    ++line_no;
    const int first_line = line_no;
    record = line;
    while (!split_csv(record, fields)) {
      if (!std::getline(in, line)) throw UserError(fmt::format("{}:{}: unterminated quoted field", path, first_line));
      ++line_no;
      record += "\n" + line;
    }
    if (record.empty()) continue;
    const std::string where = fmt::format("{}:{}", path, first_line);
    if (fields.size() != col.size()) {
      throw UserError(fmt::format("{}: {} fields, header has {}", where, fields.size(), col.size()));
    }
    for (const auto& [name, i] : col)  // cells end up in JSON output (file names), which must be UTF-8
      if (!is_valid_utf8(fields[i])) throw UserError(fmt::format("{}: column '{}': not valid UTF-8", where, name));
    auto field = [&](const std::string& n) -> const std::string& { return fields[col.at(n)]; };
    GpuMemNetRow row;
    row.filename = field("Filename");
    row.line = first_line;
    if (field("Activations-Params") == "[]") {
      ++ds.no_layers;
      continue;
    }
    count_layers(field("Activations-Params"), where, row.inputs);
    if (family == GpuMemNetFamily::MLP && row.inputs.conv > 0) {
      throw UserError(fmt::format("{}: conv2d layers in an MLP row; is this the CNN set (--format gpumemnet-cnn)?", where));
    }
    row.inputs.depth = row.inputs.linear + row.inputs.conv;
    // Up to 2^50 parameters / activations (as in summaries), so the features stay exact doubles.
    row.inputs.params = integer(field("Total Parameters"), where, "Total Parameters", std::int64_t{1} << 50);
    row.inputs.activations = integer(field("Total Activations"), where, "Total Activations", std::int64_t{1} << 50);
    row.inputs.batch = integer(field("Batch Size"), where, "Batch Size", limits::kMaxBatch);
    if (row.inputs.batch <= 0) throw UserError(fmt::format("{}: Batch Size must be positive", where));
    try {
      row.inputs.activation = canonical_activation(field("Activation Function"));
    } catch (const UserError& e) {
      throw UserError(fmt::format("{}: {}", where, e.what()));
    }
    row.measured_mib = number(field("Max GPU Memory (MiB)"), where, "Max GPU Memory (MiB)",
                              static_cast<double>(limits::kMaxGpuMiB));
    if (family == GpuMemNetFamily::CNN) {
      const auto& status = field("Status");
      if (status == "OOM_CRASH") row.oom = true;
      else if (status != "SUCCESSFUL")
        throw UserError(fmt::format("{}: Status '{}' is neither SUCCESSFUL nor OOM_CRASH", where, status));
    }
    for (auto [name, out] : {std::pair{"Avg SMACT", &row.smact}, std::pair{"Avg SMOCC", &row.smocc}}) {
      if (!col.count(name)) continue;
      const double v = parse_real(field(name), fmt::format("{}: column '{}'", where, name), -1, 1);
      if (v < 0 && v != -1)  // -1 is the sampler's "recorded nothing"; any other negative is damage
        throw UserError(fmt::format("{}: column '{}' is {} (an activity is in [0, 1], or -1 when not sampled)", where, name, v));
      if (v >= 0) *out = v;
    }
    if (row.measured_mib < 0) throw UserError(fmt::format("{}: negative measured memory", where));
    // One model per row: a repeat would weigh twice in the fit and the figures.
    if (const auto [it, fresh] = first_at.emplace(row.filename, first_line); !fresh)
      throw UserError(fmt::format("{}: Filename '{}' repeats the row at line {}", where, one_line(row.filename.substr(0, 200)),
                                  it->second));
    if (!row.oom && row.measured_mib == 0) {
      ++ds.unmeasured;
      continue;
    }
    ds.rows.push_back(std::move(row));
  }
  if (ds.rows.empty()) throw UserError(fmt::format("{}: no usable rows", path));
  return ds;
}

}  // namespace colo::estimate
