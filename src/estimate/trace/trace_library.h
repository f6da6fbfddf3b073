#pragma once
// A directory of probe traces recorded ahead of time for a data set's rows (for thousands of
// GPUMemNet rows one Python process probes them all: `python3 -m colo_probe.gpumemnet --csv F
// --kind cnn|mlp --out-dir DIR`). DIR/index.jsonl has one JSON object per row:
//   {"row": i, "filename": "...", "status": "ok"|"skipped", "reason": "...", "trace": "<i>.trace", ...}
// `colo estimate eval|calibrate --estimator trace --traces DIR` look rows up here by filename.
#include <map>
#include <memory>
#include <string>

#include "estimate/trace/probe_trace.h"

namespace colo::estimate {

class TraceLibrary {
 public:
  // Reads DIR/index.jsonl. Throws colo::UserError "DIR/index.jsonl:LINE: ..." on malformed lines.
  explicit TraceLibrary(const std::string& dir);

  struct Entry {
    std::string trace_path;  // empty when the row was not probed
    std::string reason;      // why not (the probe's or the rebuild's reason)
  };
  // nullptr when the index does not list `id` at all.
  const Entry* find(const std::string& id) const;
  // The row's trace, loaded once. Throws colo::UserError for a missing or malformed file.
  std::shared_ptr<const ProbeTrace> load(const Entry& e) const;
  std::size_t size() const { return entries_.size(); }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::map<std::string, Entry> entries_;
  mutable std::map<std::string, std::shared_ptr<const ProbeTrace>> cache_;
};

}  // namespace colo::estimate
