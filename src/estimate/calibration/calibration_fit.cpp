#include "estimate/calibration/calibration_fit.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <fmt/format.h>

#include "core/error.h"
#include "estimate/allocator/allocsim.h"

namespace colo::estimate {

namespace {

// Estimate of row i: simulated reserved peak * (1 + margin) + context.
double median_abs(const std::vector<double>& reserved, const std::vector<double>& measured, double ctx, double margin) {
  std::vector<double> a;
  a.reserve(reserved.size());
  for (std::size_t i = 0; i < reserved.size(); ++i)
    a.push_back(std::abs(std::ceil(reserved[i] * (1 + margin) + ctx) - measured[i]) / measured[i]);
  std::nth_element(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(a.size() / 2), a.end());
  return a[a.size() / 2];
}

double under_rate(const std::vector<double>& reserved, const std::vector<double>& measured, double ctx, double margin) {
  std::size_t under = 0;
  for (std::size_t i = 0; i < reserved.size(); ++i) under += std::ceil(reserved[i] * (1 + margin) + ctx) < measured[i];
  return static_cast<double>(under) / static_cast<double>(reserved.size());
}

// Safety margin on the simulated part: the (1 - max_under_rate) quantile of the uplift each row
// would need, (measured - context) / simulated - 1, rounded up to 0.001.
double needed_margin(const std::vector<double>& reserved, const std::vector<double>& measured, double ctx,
                     double max_under_rate) {
  std::vector<double> need;
  for (std::size_t i = 0; i < reserved.size(); ++i) need.push_back((measured[i] - ctx) / std::max(reserved[i], 1.0) - 1.0);
  std::sort(need.begin(), need.end());
  const auto k = static_cast<std::size_t>(std::floor((1.0 - max_under_rate) * static_cast<double>(need.size())));
  const double m = std::max(0.0, need[std::min(k, need.size() - 1)]);
  return std::ceil(m * 1000.0) / 1000.0;
}

}  // namespace

namespace {

struct Candidate {
  double ratio = 0, strided = 0;
  std::vector<double> reserved;  // simulated peak reserved per row (MiB), no context, no margin
};

struct Choice {
  std::size_t k = 0;  // candidate index
  double ctx = 0, unbiased = 0, margin = 0, median = 0;
};

std::vector<double> pick(const std::vector<double>& v, const std::vector<std::size_t>& idx) {
  std::vector<double> out;
  out.reserve(idx.size());
  for (auto i : idx) out.push_back(v[i]);
  return out;
}

// The context (on top of fixed_ctx) that minimises the median error with no margin: every row's
// residual is a candidate, where that row flips sides.
std::pair<double, double> unbiased_context(const std::vector<double>& reserved, const std::vector<double>& measured,
                                           double fixed_ctx) {
  std::vector<double> cands;
  for (std::size_t i = 0; i < reserved.size(); ++i) cands.push_back(std::max(0.0, measured[i] - reserved[i] - fixed_ctx));
  std::sort(cands.begin(), cands.end());
  cands.erase(std::unique(cands.begin(), cands.end()), cands.end());
  double ctx = 0, med = 1e300;
  for (double c : cands) {
    const double m = median_abs(reserved, measured, fixed_ctx + c, 0);
    if (m < med) {
      med = m;
      ctx = c;
    }
  }
  return {ctx, med};
}

// Fits on the rows `idx`: per candidate the unbiased context (cached per candidate in ctx_cache),
// the margin that leaves `under` of the rows under-estimated, and the median error after it; the
// candidate with the lowest median wins (a tighter spread needs less margin).
Choice choose(const std::vector<Candidate>& cands, const std::vector<double>& measured,
              const std::vector<std::size_t>& idx, double fixed_ctx, double under,
              std::vector<std::pair<double, double>>& ctx_cache) {
  const auto meas = pick(measured, idx);
  Choice best;
  best.median = 1e300;
  for (std::size_t k = 0; k < cands.size(); ++k) {
    const auto res = pick(cands[k].reserved, idx);
    if (ctx_cache.size() <= k) ctx_cache.push_back(unbiased_context(res, meas, fixed_ctx));
    const auto [ctx, unb] = ctx_cache[k];
    const double margin = needed_margin(res, meas, fixed_ctx + ctx, under);
    const double med = median_abs(res, meas, fixed_ctx + ctx, margin);
    if (med < best.median) best = Choice{k, ctx, unb, margin, med};
  }
  return best;
}

}  // namespace

FitResult fit_profile(const std::vector<DatasetRow>& rows, const CalibrationProfile& base, const FitOptions& opt) {
  std::vector<const DatasetRow*> use;
  for (const auto& r : rows)
    if (r.graph && !r.oom && r.measured && *r.measured > 0) use.push_back(&r);
  if (use.size() < 10) throw UserError("calibration needs at least 10 measured rows (got " + std::to_string(use.size()) + ")");
  std::vector<double> measured;
  for (auto* r : use) measured.push_back(static_cast<double>(*r->measured));
  const double fixed_ctx = opt.cnn ? base.context_mib : 0.0;  // CNN fit: cuDNN on top of the base

  // Every candidate's simulated peaks, computed once.
  std::vector<Candidate> cands;
  const std::vector<double> ratios = opt.cnn ? opt.conv_workspace_ratio : std::vector<double>{0.0};
  const std::vector<double> strided = opt.cnn ? opt.strided_conv_workspace_ratio : std::vector<double>{0.0};
  for (double ratio : ratios) {
    for (double sratio : strided) {
      CalibrationProfile p = base;
      p.context_mib = 0;
      p.cudnn_context_mib = 0;
      p.safety_margin = 0;
      p.cudnn_safety_margin = 0;
      p.conv_workspace_ratio = ratio;
      p.strided_conv_workspace_ratio = sratio;
      p.gpu_total_mib = MiB{1} << 30;  // 1 PiB: no capacity limit while fitting
      Candidate c{ratio, sratio, {}};
      for (auto* r : use)
        c.reserved.push_back(simulate_allocsim(*r->graph, r->batch, r->optimizer.value_or(opt.default_optimizer), p).total_mib);
      cands.push_back(std::move(c));
    }
  }

  // Choosing among candidates by their median after the margin favours those whose margin came
  // out low by chance, so new rows would be under-estimated more often than the fit rows. Nested
  // k-fold cross-validation measures that: each fold is estimated by a fit (choice, context,
  // margin) on the other folds. The fit's own under-estimate target is lowered in 0.5-point steps
  // until the held-out folds see at most max_under_rate.
  const std::size_t n = use.size();
  const std::size_t folds = std::min<std::size_t>(opt.cv_folds, n / 2);
  std::vector<std::vector<std::size_t>> train_idx(folds), test_idx(folds);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t f = 0; f < folds; ++f) (i % folds == f ? test_idx[f] : train_idx[f]).push_back(i);
  std::vector<std::vector<std::pair<double, double>>> fold_ctx(folds);
  std::vector<std::pair<double, double>> all_ctx;
  std::vector<std::size_t> all_idx(n);
  for (std::size_t i = 0; i < n; ++i) all_idx[i] = i;
  double target = opt.max_under_rate, cv_under = 0, cv_median = 0;
  nlohmann::ordered_json cv_steps = nlohmann::ordered_json::array();
  for (;;) {
    std::size_t under = 0;
    std::vector<double> errs;
    for (std::size_t f = 0; f < folds; ++f) {
      const Choice c = choose(cands, measured, train_idx[f], fixed_ctx, target, fold_ctx[f]);
      for (auto i : test_idx[f]) {
        const double est = std::ceil(cands[c.k].reserved[i] * (1 + c.margin) + fixed_ctx + c.ctx);
        under += est < measured[i];
        errs.push_back(std::abs(est - measured[i]) / measured[i]);
      }
    }
    cv_under = folds > 0 ? static_cast<double>(under) / static_cast<double>(n) : 0;
    std::nth_element(errs.begin(), errs.begin() + static_cast<std::ptrdiff_t>(errs.size() / 2), errs.end());
    cv_median = errs.empty() ? 0 : errs[errs.size() / 2];
    cv_steps.push_back({{"fit_under_rate_target", target}, {"cv_under_rate", cv_under}, {"cv_median_abs_rel_err", cv_median}});
    if (folds == 0 || cv_under <= opt.max_under_rate || target <= 0.0) break;
    target = std::max(0.0, std::round((target - 0.005) * 1000.0) / 1000.0);
  }
  const Choice chosen = choose(cands, measured, all_idx, fixed_ctx, target, all_ctx);
  const Candidate& win = cands[chosen.k];
  const double total_ctx = fixed_ctx + chosen.ctx;
  const double margin = chosen.margin;

  nlohmann::ordered_json candidates = nlohmann::ordered_json::array();
  for (std::size_t k = 0; k < cands.size(); ++k) {
    const double m = needed_margin(cands[k].reserved, measured, fixed_ctx + all_ctx[k].first, target);
    candidates.push_back({{"conv_workspace_ratio", cands[k].ratio},
                          {"strided_conv_workspace_ratio", cands[k].strided},
                          {"context_mib", all_ctx[k].first},
                          {"median_abs_rel_err_unbiased", all_ctx[k].second},
                          {"under_rate_unbiased", under_rate(cands[k].reserved, measured, fixed_ctx + all_ctx[k].first, 0)},
                          {"safety_margin", m},
                          {"median_abs_rel_err", median_abs(cands[k].reserved, measured, fixed_ctx + all_ctx[k].first, m)}});
  }

  FitResult best;
  best.profile = base;
  if (opt.cnn) {
    best.profile.cudnn_context_mib = std::round(chosen.ctx);
    best.profile.conv_workspace_ratio = win.ratio;
    best.profile.strided_conv_workspace_ratio = win.strided;
  } else {
    best.profile.context_mib = std::round(chosen.ctx);
  }
  (opt.cnn ? best.profile.cudnn_safety_margin : best.profile.safety_margin) = margin;
  best.report["rows"] = use.size();
  best.report["fitted"] = opt.cnn ? "cudnn_context_mib, conv_workspace_ratio, strided_conv_workspace_ratio, cudnn_safety_margin"
                                  : "context_mib, safety_margin";
  best.report["max_under_rate"] = opt.max_under_rate;
  best.report["default_optimizer"] = std::string(to_string(opt.default_optimizer));
  best.report["cross_validation"] = {{"folds", folds},
                                     {"fit_under_rate_target", target},
                                     {"cv_under_rate", cv_under},
                                     {"cv_median_abs_rel_err", cv_median},
                                     {"steps", cv_steps}};
  best.report["chosen"] = {{"conv_workspace_ratio", win.ratio},
                           {"strided_conv_workspace_ratio", win.strided},
                           {"context_mib", chosen.ctx},
                           {"median_abs_rel_err_unbiased", chosen.unbiased},
                           {"safety_margin", margin},
                           {"median_abs_rel_err", median_abs(win.reserved, measured, total_ctx, margin)},
                           {"under_rate", under_rate(win.reserved, measured, total_ctx, margin)}};
  best.report["candidates"] = candidates;
  std::string csv = "id,measured_mib,simulated_reserved_mib\n";
  for (std::size_t i = 0; i < use.size(); ++i)
    csv += fmt::format("\"{}\",{},{:.1f}\n", use[i]->id, measured[i], win.reserved[i]);
  best.inputs_csv = std::move(csv);
  return best;
}

}  // namespace colo::estimate
