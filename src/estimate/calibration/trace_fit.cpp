#include "estimate/calibration/trace_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"
#include "estimate/trace/trace_replay.h"

namespace colo::estimate {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Row {
  std::shared_ptr<const ProbeTrace> trace;
  double measured = 0;
  double context = 0;  // the profile's context for this trace (cuDNN or not)
};

struct TraceCandidate {
  double ratio = 0, strided = 0, offset = 0, margin = 0, median_err = 0, under = 0;
};

// For each margin on a grid, the context offset is the smallest that leaves at most max_under of
// the rows under-estimated (a quantile of measured - peak x (1 + margin) - context); the pair with
// the lowest median |error| wins. An offset absorbs the context's spread (small jobs), a margin
// what grows with the job; the data decide how much of each.
TraceCandidate score(const std::vector<Row>& rows, const std::vector<double>& peaks, double max_under) {
  const std::size_t n = rows.size();
  const std::size_t allowed = static_cast<std::size_t>(std::floor(max_under * static_cast<double>(n)));
  TraceCandidate best;
  best.median_err = std::numeric_limits<double>::infinity();
  for (int step = 0; step <= 100; ++step) {
    const double m = step * 0.01;
    std::vector<double> resid(n);
    for (std::size_t i = 0; i < n; ++i) resid[i] = rows[i].measured - peaks[i] * (1 + m) - rows[i].context;
    std::vector<double> sorted = resid;
    std::sort(sorted.begin(), sorted.end());
    // offset >= the (n - allowed)-th smallest residual: then at most `allowed` rows stay above it.
    const double offset = std::ceil(sorted[n - 1 - std::min(allowed, n - 1)]);
    std::size_t under = 0;
    std::vector<double> err(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double est = std::ceil(peaks[i] * (1 + m) + rows[i].context + offset);
      if (est < rows[i].measured) ++under;
      err[i] = std::fabs(est - rows[i].measured) / rows[i].measured;
    }
    const double med = median(err);
    if (med < best.median_err) {
      best.median_err = med;
      best.margin = m;
      best.offset = offset;
      best.under = static_cast<double>(under) / static_cast<double>(n);
    }
  }
  return best;
}

}  // namespace

TraceFitResult fit_trace_profile(const std::vector<DatasetRow>& train_rows, const TraceLibrary& traces,
                                 const CalibrationProfile& base, const TraceFitOptions& opt) {
  std::vector<Row> rows;
  std::size_t without_trace = 0;
  for (const DatasetRow& r : train_rows) {
    if (r.oom || !r.measured || *r.measured <= 0) continue;
    const TraceLibrary::Entry* e = traces.find(r.id);
    if (!e || e->trace_path.empty()) {
      ++without_trace;
      continue;
    }
    Row row;
    row.trace = traces.load(*e);
    row.measured = static_cast<double>(*r.measured);
    row.context = base.context_mib + (trace_uses_cudnn(*row.trace) ? base.cudnn_context_mib : 0.0);
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw UserError("calibrate --estimator trace: no training row has both a trace and a measurement");
  const std::vector<double> ratios = opt.cnn ? opt.conv_workspace_ratio : std::vector<double>{0.0};
  const std::vector<double> strided = opt.cnn ? opt.strided_conv_workspace_ratio : std::vector<double>{0.0};
  TraceFitResult out;
  out.report["rows"] = rows.size();
  out.report["rows_without_trace"] = without_trace;
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  TraceCandidate best;
  best.median_err = std::numeric_limits<double>::infinity();
  for (double ratio : ratios) {
    for (double sr : strided) {
      TraceReplayOptions o = TraceReplayOptions::from_profile(base);
      o.conv_workspace = 0;
      o.conv_workspace_ratio = ratio;
      o.strided_conv_workspace_ratio = sr;
      std::vector<double> peaks;
      for (const Row& r : rows) peaks.push_back(mib_of_bytes(replay_probe_trace(*r.trace, o).reserved_peak));
      TraceCandidate c = score(rows, peaks, opt.max_under_rate);
      c.ratio = ratio;
      c.strided = sr;
      all.push_back({{"conv_workspace_ratio", ratio}, {"strided_conv_workspace_ratio", sr}, {"context_offset_mib", c.offset},
                     {"margin", c.margin}, {"median_abs_rel_err", c.median_err}, {"under_rate", c.under}});
      if (c.median_err < best.median_err) best = c;
    }
  }
  out.profile = base;
  if (opt.cnn) {
    out.profile.trace_conv_workspace_mib = 0;
    out.profile.trace_conv_workspace_ratio = best.ratio;
    out.profile.trace_strided_conv_workspace_ratio = best.strided;
    out.profile.trace_cudnn_context_offset_mib = best.offset;
    out.profile.trace_cudnn_safety_margin = best.margin;
  } else {
    out.profile.trace_context_offset_mib = best.offset;
    out.profile.trace_safety_margin = best.margin;
  }
  out.report["fitted"] = opt.cnn ? "trace_conv_workspace_ratio, trace_strided_conv_workspace_ratio, "
                                   "trace_cudnn_context_offset_mib, trace_cudnn_safety_margin"
                                 : "trace_context_offset_mib, trace_safety_margin";
  out.report["chosen"] = {{"conv_workspace_ratio", best.ratio}, {"strided_conv_workspace_ratio", best.strided},
                          {"context_offset_mib", best.offset}, {"margin", best.margin},
                          {"median_abs_rel_err", best.median_err}, {"under_rate", best.under}};
  out.report["max_under_rate"] = opt.max_under_rate;
  out.report["candidates"] = all;
  return out;
}

}  // namespace colo::estimate
