#pragma once
// A submission trace: (submit offset in seconds, workload name) rows, in submission order.
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"
#include "sim/workloads/workload_catalog.h"

namespace colo::sim {

struct TraceEntry {
  Seconds submit_s = 0;
  const Workload* workload = nullptr;  // points into the catalog the trace was read against
  int line = 0;                        // source line, for messages
};

struct Trace {
  std::string path;
  std::vector<TraceEntry> entries;
};

// Columns submit_offset_s, workload. Offsets must be finite, ≥ 0 and non-decreasing (rows with
// the same offset keep file order = FIFO order); every workload must be in `catalog`.
// Throws colo::UserError "FILE:LINE: problem".
Trace load_trace(const std::string& path, const WorkloadCatalog& catalog);
Trace parse_trace(std::string_view text, const std::string& path, const WorkloadCatalog& catalog);

}  // namespace colo::sim
