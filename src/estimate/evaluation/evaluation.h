#pragma once
// Accuracy of an estimator over a data set with measured peaks (what `colo estimate eval` prints).
#include <cstdint>
#include <optional>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "estimate/evaluation/dataset.h"
#include "estimate/estimator.h"

namespace colo::estimate {

struct EvalRow {
  std::string id;
  std::optional<MiB> measured;
  bool oom = false;
  MiB estimate = 0;
  std::string skipped_because;        // set when the estimator cannot take this row (trace: no probe model)
  bool skipped = false;               // not scored: no model to estimate, no measurement, or no probe model
};

struct EvalSummary {
  std::size_t n = 0;                  // rows in the error statistics (measured, did not crash)
  double median_abs_rel_err = 0, p90_abs_rel_err = 0, max_abs_rel_err = 0, mean_abs_rel_err = 0;
  double median_rel_err = 0;          // signed: negative = under-estimate
  double under_rate = 0;              // share of the n rows with estimate < measured
  double bucket_acc_1gib = 0, bucket_acc_2gib = 0, bucket_acc_8gib = 0;  // same floor(MiB / N GiB)
  std::size_t oom_rows = 0;           // rows that crashed out of memory
  std::size_t oom_predicted = 0;      // ... whose estimate exceeds the GPU's memory
  std::size_t skipped = 0;            // rows without a measurement that did not crash
  nlohmann::ordered_json to_json() const;
};

EvalSummary summarize(const std::vector<EvalRow>& rows, MiB gpu_total_mib);

// Runs `est` on every row. Rows without an optimizer use `default_optimizer`; the oracle is fed
// the measured figure. trace/faketensor run the probe for each carma row it can rebuild
// (estimate/trace/carma_probe.h); the others are skipped with their reason. Per-row failures are
// UserErrors naming the row.
// With `traces` (pre-recorded probe traces, estimate/trace/trace_library.h) trace/faketensor read
// each row's trace from there instead of probing.
class TraceLibrary;
// `progress` (optional) is called with (rows done, rows) after each row.
// `keep_traces_dir` (probing, without `traces`): each probe's trace is also written there as N.trace,
// with DIR/index.jsonl naming each row's (the layout TraceLibrary reads), so a later run, or a
// script, can read them instead of probing again.
std::vector<EvalRow> evaluate(const std::vector<DatasetRow>& rows, const Estimator& est, const std::string& gpu,
                              Optimizer default_optimizer, const TraceLibrary* traces = nullptr,
                              const std::function<void(std::size_t, std::size_t)>& progress = {},
                              const std::string& keep_traces_dir = "");

}  // namespace colo::estimate
