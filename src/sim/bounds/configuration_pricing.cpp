#include "sim/bounds/configuration_pricing.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>

namespace colo::sim {

namespace {

constexpr std::size_t kKeep = 12;                 // columns returned per pricing (the most valuable)
constexpr int kTop = 64;                          // pieces the best-prices table holds per suffix

// Depth-first over the priced types, choosing how many pieces of each; a branch is cut when the
// most any completion could earn is no more than the target θ = max(1, best so far) — the
// search's answer is then exact wherever it exceeds 1, which is all the bound needs.
class Search {
 public:
  Search(std::span<const PieceType> types, std::span<const double> price, MiB capacity, double per_corunner,
         std::int64_t budget)
      : types_(types), price_(price), capacity_(capacity), a_(per_corunner), budget_(budget) {
    for (std::size_t k = 0; k < types.size(); ++k)
      if (price[k] > 0) order_.push_back(k);
    // Large pieces first: memory cuts the tree early.
    std::sort(order_.begin(), order_.end(), [&](std::size_t x, std::size_t y) { return types[x].mib > types[y].mib; });
    // Per suffix of order_: the best price per unit of demand, demand per MiB, the smallest
    // piece, the demand range, and the sum of the t best prices (t pieces, counts respected).
    const std::size_t m = order_.size();
    ratio_.assign(m + 1, 0.0);
    density_.assign(m + 1, 0.0);
    free_.assign(m + 1, false);
    smallest_.assign(m + 1, capacity);
    dmin_.assign(m + 1, 1.0);
    dmax_.assign(m + 1, 0.0);
    top_.assign(m + 1, {0.0});
    for (std::size_t i = m; i-- > 0;) {
      const PieceType& t = types[order_[i]];
      const double pr = price[order_[i]];
      ratio_[i] = ratio_[i + 1];
      density_[i] = density_[i + 1];
      free_[i] = free_[i + 1];
      if (t.demand > 0)
        ratio_[i] = std::max(ratio_[i], pr / t.demand);
      else
        free_[i] = true;  // no demand: only the count and the per-co-runner cost bound it
      density_[i] = t.mib > 0 ? std::max(density_[i], t.demand / static_cast<double>(t.mib)) : 1.0;
      smallest_[i] = std::min(smallest_[i + 1], t.mib);
      dmin_[i] = std::min(dmin_[i + 1], t.demand);
      dmax_[i] = std::max(dmax_[i + 1], t.demand);
      // Merge this type's pieces into the suffix's best prices.
      std::vector<double> prices;
      for (std::size_t t2 = 1; t2 < top_[i + 1].size(); ++t2) prices.push_back(top_[i + 1][t2] - top_[i + 1][t2 - 1]);
      for (int c = 0; c < t.max_count && static_cast<int>(prices.size()) < 2 * kTop; ++c) prices.push_back(pr);
      std::sort(prices.begin(), prices.end(), std::greater<>());
      if (prices.size() > static_cast<std::size_t>(kTop)) prices.resize(kTop);
      top_[i].assign(1, 0.0);
      for (double v : prices) top_[i].push_back(top_[i].back() + v);
    }
    count_.assign(types.size(), 0);
  }

  Pricing run() {
    go(0, 0, 0, 0.0, 0.0);
    Pricing out;
    out.upper_bound = std::max({best_, cut_bound_, pruned_ ? 1.0 : 0.0});
    std::sort(kept_.begin(), kept_.end(), [](const Configuration& x, const Configuration& y) { return x.value > y.value; });
    out.candidates = std::move(kept_);
    out.nodes = nodes_;
    return out;
  }

 private:
  // Most a configuration extending this one by t ≥ 1 pieces from order_[i..] can earn: their
  // prices sum to at most top_[i][t] and to at most ratio × their demand x, which lies between
  // t × the smallest and t × the largest demand and fits the memory left; so
  //   (y + min(top(t), ratio × x)) / (max(1, demand + x) × (1 + a (n + t − 1)))
  // maximised over x — a ratio of linear pieces, so at an end or a breakpoint.
  // Returns as soon as it exceeds `stop`: a caller that only compares with a target learns the
  // answer without the remaining t (most nodes the search expands are decided by the first few).
  double reach(std::size_t i, int n, MiB mib, double demand, double y, double stop) const {
    const double here = n > 0 ? y / slowdown_floor_factor(n, demand, a_) : 0.0;
    if (i >= order_.size()) return here;
    const MiB left = capacity_ - mib;
    const int most_pieces = smallest_[i] > 0 ? static_cast<int>(std::min<MiB>(left / smallest_[i], 1 << 20)) : (1 << 20);
    const int t_max = std::min<int>(most_pieces, static_cast<int>(top_[i].size()) - 1);
    const double x_fit = density_[i] < 1.0 ? static_cast<double>(left) * density_[i] : 1e300;
    // The suffix's figures as locals: this is the search's innermost loop, and in the sanitized
    // Debug build the tests run, vector<bool> and operator[] calls in it cost more than the sums.
    const double r = ratio_[i], dmin = dmin_[i], dmax = dmax_[i];
    const bool free = free_[i];
    const double* const top_of = top_[i].data();
    double best = here;
    auto consider = [&](int t, double top, double lo, double hi) {
      if (lo > hi) return;
      auto f = [&](double x) { return (y + (free ? top : std::min(top, r * x))) / std::max(1.0, demand + x); };
      double v = std::max(f(lo), f(hi));
      if (demand < 1.0) v = std::max(v, f(std::clamp(1.0 - demand, lo, hi)));
      if (!free && r > 0) v = std::max(v, f(std::clamp(top / r, lo, hi)));
      best = std::max(best, v / (1.0 + a_ * (n + t - 1)));
    };
    if (best > stop) return best;
    for (int t = 1; t <= t_max; ++t) {
      consider(t, top_of[t], t * dmin, std::min(t * dmax, x_fit));
      if (best > stop) return best;
    }
    if (most_pieces > t_max) {
      // More pieces than the table holds: any number beyond it, prices bounded by ratio only.
      const int t = t_max + 1;
      consider(t, free ? 1e300 : r * std::min(x_fit, most_pieces * dmax), t * dmin, std::min(most_pieces * dmax, x_fit));
    }
    return best;
  }

  void go(std::size_t i, int n, MiB mib, double demand, double y) {
    if (n > 0) {
      const double v = y / slowdown_floor_factor(n, demand, a_);
      if (v > best_) best_ = v;
      if (v > 1.0) keep(v);
    }
    if (i >= order_.size()) return;
    const double target = std::max(1.0, best_);
    if (reach(i, n, mib, demand, y, target) <= target) {
      pruned_ = true;
      return;
    }
    if (++nodes_ > budget_) {  // out of budget: what it could still reach stands in (all of it)
      cut_bound_ = std::max(cut_bound_, reach(i, n, mib, demand, y, std::numeric_limits<double>::infinity()));
      return;
    }
    const std::size_t k = order_[i];
    const PieceType& t = types_[k];
    int most = t.max_count;
    if (t.mib > 0) most = static_cast<int>(std::min<MiB>(most, (capacity_ - mib) / t.mib));
    for (int c = most; c >= 0; --c) {
      count_[k] = c;
      go(i + 1, n + c, mib + t.mib * c, demand + t.demand * c, y + price_[k] * c);
    }
    count_[k] = 0;
  }

  void keep(double v) {
    if (kept_.size() == kKeep) {
      auto worst = std::min_element(kept_.begin(), kept_.end(),
                                    [](const Configuration& x, const Configuration& y) { return x.value < y.value; });
      if (worst->value >= v) return;
      kept_.erase(worst);
    }
    kept_.push_back({count_, v});
  }

  std::span<const PieceType> types_;
  std::span<const double> price_;
  MiB capacity_;
  double a_;
  std::int64_t budget_;
  std::vector<std::size_t> order_;
  std::vector<double> ratio_, density_, dmin_, dmax_;
  std::vector<bool> free_;
  std::vector<MiB> smallest_;
  std::vector<std::vector<double>> top_;
  std::vector<int> count_;
  std::vector<Configuration> kept_;
  double best_ = 0;
  double cut_bound_ = 0;
  bool pruned_ = false;
  std::int64_t nodes_ = 0;
};

}  // namespace

double slowdown_floor_factor(int n, double demand, double per_corunner) {
  return std::max(1.0, demand) * (1.0 + per_corunner * std::max(0, n - 1));
}

Pricing price_configurations(std::span<const PieceType> types, std::span<const double> price, MiB capacity_mib,
                             double per_corunner, std::int64_t node_budget) {
  if (price.size() != types.size()) throw std::invalid_argument("pricing: one price per piece type");
  if (capacity_mib <= 0 || !(per_corunner >= 0)) throw std::invalid_argument("pricing: bad capacity or floor");
  for (const PieceType& t : types)
    if (t.mib < 0 || t.mib > capacity_mib || t.max_count < 1 || !(t.demand >= 0 && t.demand <= 1))
      throw std::invalid_argument("pricing: bad piece type");
  return Search(types, price, capacity_mib, per_corunner, node_budget).run();
}

}  // namespace colo::sim
