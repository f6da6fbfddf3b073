#include "sim/workloads/trace.h"

#include <fmt/format.h>

#include "core/error.h"
#include "sim/workloads/csv_table.h"

namespace colo::sim {

namespace {

Trace from_table(const CsvTable& t, const WorkloadCatalog& catalog) {
  const size_t c_off = t.require("submit_offset_s"), c_name = t.require("workload");
  t.reject_unasked_columns();
  Trace tr;
  tr.path = t.path();
  Seconds previous = 0;
  for (const auto& r : t.rows()) {
    const double off = t.number(r, c_off, -CsvTable::kAny, 1e10);  // ~300 years: keeps time arithmetic exact enough
    if (off < 0) throw UserError(fmt::format("{}: negative submit_offset_s {}", t.where(r), r.cells[c_off]));
    if (!tr.entries.empty() && off < previous)
      throw UserError(fmt::format("{}: submit_offset_s {} is earlier than the previous row's {} (the trace "
                                  "must be sorted by submission time)", t.where(r), off, previous));
    const std::string& name = t.text(r, c_name);
    const Workload* w = catalog.find(name);
    if (!w) throw UserError(fmt::format("{}: unknown workload '{}' (not in {})", t.where(r), name, catalog.path()));
    tr.entries.push_back({off, w, r.line});
    previous = off;
  }
  if (tr.entries.empty()) throw UserError(fmt::format("{}: the trace has no jobs", t.path()));
  return tr;
}

}  // namespace

Trace load_trace(const std::string& path, const WorkloadCatalog& catalog) {
  return from_table(CsvTable::read(path), catalog);
}

Trace parse_trace(std::string_view text, const std::string& path, const WorkloadCatalog& catalog) {
  return from_table(CsvTable::parse(text, path), catalog);
}

}  // namespace colo::sim
