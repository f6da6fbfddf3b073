#include "sim/bounds/packing_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <vector>

#include "sim/bounds/configuration_pricing.h"
#include "sim/bounds/covering_lp.h"

namespace colo::sim {

namespace {

constexpr int kMaxRounds = 200;      // column generation stops here at the latest (still certified)
constexpr double kOptimal = 1e-6;    // pricing excess under which the programme counts as solved
constexpr std::int64_t kQuickNodes = 5'000;        // search nodes while columns are still being found
constexpr std::int64_t kCertifyNodes = 1'000'000;  // when they are not
constexpr std::int64_t kTotalNodes = 3'000'000;    // per bound, all cuts: then the best certified figure stands
constexpr std::size_t kMaxTypes = 32;              // distinct pieces kept exact up to this many
constexpr std::size_t kDemandBands = 4, kMemoryBands = 8;  // clusters beyond it
constexpr std::size_t kMemo = 8;  // bounds kept

struct Solved {
  double gpu_seconds = 0;  // certified: ≤ the programme's optimum
  double feasible_gpu_seconds = std::numeric_limits<double>::infinity();  // a covering's cost: ≥ the optimum
  int columns = 0;
  int rounds = 0;
  double gap = 0;
};

// The cost of a covering made from the solver's answer x: scaled up until every row is covered
// exactly as written (whatever the solver's tolerances), it is feasible, so its cost is at least the
// programme's optimum. Infinite when a row is left uncovered.
double feasible_cost(const std::vector<double>& x, const std::vector<std::vector<std::pair<int, double>>>& columns,
                     const std::vector<double>& work) {
  std::vector<double> cover(work.size(), 0.0);
  double total = 0;
  for (std::size_t c = 0; c < columns.size() && c < x.size(); ++c) {
    total += x[c];
    for (const auto& [row, a] : columns[c]) cover[static_cast<std::size_t>(row)] += a * x[c];
  }
  double scale = 1;
  for (std::size_t r = 0; r < work.size(); ++r) {
    if (!(cover[r] > 0)) return std::numeric_limits<double>::infinity();
    scale = std::max(scale, work[r] / cover[r]);
  }
  return total * scale;
}

// The programme for the given pieces: certified GPU-seconds, and the cost of a feasible covering.
Solved solve(const std::vector<PieceType>& types, const std::vector<double>& work, const PackingBoundSetup& s,
             std::int64_t& nodes_left) {
  Solved out;
  CoveringLp lp(work);
  std::set<std::vector<int>> seen;
  std::vector<std::vector<std::pair<int, double>>> columns;  // as given to the LP (for the feasible cost)
  for (std::size_t k = 0; k < types.size(); ++k) {  // each type alone: always feasible
    std::vector<int> count(types.size(), 0);
    count[k] = 1;
    seen.insert(count);
    const std::pair<int, double> e{static_cast<int>(k), 1.0 / slowdown_floor_factor(1, types[k].demand, s.floor.per_corunner)};
    lp.add_column({&e, 1});
    columns.push_back({e});
  }
  out.gap = 0;
  for (int round = 0; round < kMaxRounds; ++round) {
    const CoveringLp::Solution sol = lp.solve();
    out.feasible_gpu_seconds = std::min(out.feasible_gpu_seconds, feasible_cost(sol.x, columns, work));
    // A small search finds columns; when it finds none, a large one certifies (or finds more).
    auto price = [&](std::int64_t budget) {
      Pricing p = price_configurations(types, sol.dual, s.gpu_memory_mib, s.floor.per_corunner,
                                       std::max<std::int64_t>(1, std::min(budget, nodes_left)));
      nodes_left -= p.nodes;
      return p;
    };
    Pricing pr = price(kQuickNodes);
    if (nodes_left > 0 &&
        std::none_of(pr.candidates.begin(), pr.candidates.end(), [](const Configuration& c) { return c.value > 1.0 + kOptimal; }))
      pr = price(kCertifyNodes);
    ++out.rounds;
    // Weak duality: prices scaled to 1 / (the most any configuration earns) are feasible dual
    // prices, so Σ W × price / that is a bound, whatever the solver's accuracy.
    double earned = 0;
    for (std::size_t k = 0; k < types.size(); ++k) earned += work[k] * sol.dual[k];
    const double excess = std::max(1.0, pr.upper_bound);
    out.gpu_seconds = std::max(out.gpu_seconds, earned / excess);
    out.gap = excess - 1.0;
    if (excess - 1.0 <= kOptimal) break;
    int added = 0;
    for (const Configuration& c : pr.candidates) {
      if (c.value <= 1.0 + kOptimal || !seen.insert(c.count).second) continue;
      int n = 0;
      double demand = 0;
      for (std::size_t k = 0; k < types.size(); ++k) {
        n += c.count[k];
        demand += types[k].demand * c.count[k];
      }
      const double f = slowdown_floor_factor(n, demand, s.floor.per_corunner);
      std::vector<std::pair<int, double>> entries;
      for (std::size_t k = 0; k < types.size(); ++k)
        if (c.count[k] > 0) entries.emplace_back(static_cast<int>(k), c.count[k] / f);
      lp.add_column(entries);
      columns.push_back(std::move(entries));
      ++added;
    }
    if (added == 0 || nodes_left <= 0) break;  // the certified figure stands
  }
  out.columns = lp.columns();
  return out;
}

// Pieces of the same memory and demand are one type of the programme. Many distinct jobs (a
// synthetic trace) would make a programme too large to price, so beyond kMaxTypes they are
// clustered: kDemandBands bands of demand, each split into kMemoryBands bands of memory (equal
// numbers of pieces), and a cluster stands for its smallest memory and smallest demand. A piece
// that needs less memory and demand is never slower to schedule, so the programme of the
// clusters is still a bound, only a looser one.
void group(std::span<const SimJobSpec* const> jobs, const PackingBoundSetup& s, std::vector<PieceType>& types,
           std::vector<double>& work, std::vector<int>* type_of = nullptr) {
  struct Piece {
    MiB mib;
    double demand, work;
    std::size_t job;
  };
  std::vector<Piece> pieces;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const SimJobSpec* j = jobs[i];
    const double w = static_cast<double>(j->gpus) * (j->solo_s - std::min(s.memory_free_s, j->solo_s));
    if (w > 0) pieces.push_back({j->true_mib, s.floor.demand(j->smact, j->busy), w, i});
  }
  if (type_of) type_of->assign(jobs.size(), -1);
  std::map<std::pair<MiB, double>, std::size_t> index;
  auto add = [&](MiB mib, double demand, double w, int count) {
    auto [it, fresh] = index.try_emplace({mib, demand}, types.size());
    if (fresh) {
      types.push_back({mib, demand, 0});
      work.push_back(0);
    }
    types[it->second].max_count += count;
    work[it->second] += w;
    return static_cast<int>(it->second);
  };
  for (const Piece& p : pieces) {
    const int k = add(p.mib, p.demand, p.work, 1);
    if (type_of) (*type_of)[p.job] = k;
  }
  if (types.size() <= kMaxTypes) return;
  types.clear();
  work.clear();
  index.clear();
  std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.demand < b.demand; });
  for (std::size_t b = 0; b < kDemandBands; ++b) {
    std::vector<Piece> band(pieces.begin() + static_cast<std::ptrdiff_t>(pieces.size() * b / kDemandBands),
                            pieces.begin() + static_cast<std::ptrdiff_t>(pieces.size() * (b + 1) / kDemandBands));
    std::sort(band.begin(), band.end(), [](const Piece& a, const Piece& c) { return a.mib < c.mib; });
    for (std::size_t q = 0; q < kMemoryBands; ++q) {
      const std::size_t from = band.size() * q / kMemoryBands, to = band.size() * (q + 1) / kMemoryBands;
      if (from == to) continue;
      MiB mib = band[from].mib;  // sorted: the smallest
      double demand = 1.0, w = 0;
      for (std::size_t i = from; i < to; ++i) {
        demand = std::min(demand, band[i].demand);
        w += band[i].work;
      }
      const int k = add(mib, demand, w, static_cast<int>(to - from));
      if (type_of)
        for (std::size_t i = from; i < to; ++i) (*type_of)[band[i].job] = k;
    }
  }
}

// Progress cuts. Before a time t only the jobs submitted earlier progress, each piece at most
// t − submit − ramp with its memory resident (D̄, each job's most). Whatever a schedule does before
// t is a covering of its progress D ≤ D̄ there, and what it does after t a covering of the rest
// R = W − D, so programme(W) ≤ programme(D̄) + programme(R) (coverings add; the programme only
// grows with the work) and the makespan is at least (t − origin) + (programme(W) − programme(D̄)) /
// gpus. programme(W) is the certified figure (from below), programme(D̄) the cost of a feasible
// covering (from above), both on the same types, with the early jobs' counts. It helps where the
// first hours cannot keep every GPU busy, which the release-time cuts above (they drop the early
// jobs altogether) cannot see.
// `types` and `type_of` are the origin cut's grouping of `live`: the same programme.
void progress_cuts(std::span<const SimJobSpec* const> live, const std::vector<PieceType>& types,
                   const std::vector<int>& type_of, const PackingBoundSetup& s, PackingBound& out,
                   std::int64_t& nodes_left) {
  if (s.progress_cuts < 2 || !(out.busy_gpu_seconds > 0) || nodes_left <= 0 ||
      !(s.memory_free_s < std::numeric_limits<double>::infinity()))
    return;
  // Cut times: submit-time quantiles and an even grid up to the last submission (progress_cuts in all).
  std::vector<Seconds> times;
  const Seconds last = live.back()->submit_s;
  const std::size_t half = static_cast<std::size_t>(s.progress_cuts) / 2;
  for (std::size_t i = 1; i <= half; ++i) {
    times.push_back(live[live.size() * i / (half + 1)]->submit_s);
    times.push_back(s.origin_s + (last - s.origin_s) * static_cast<double>(i) / static_cast<double>(half));
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  const double gpus = static_cast<double>(s.gpus);
  for (const Seconds t : times) {
    if (t <= s.origin_s || nodes_left <= 0) continue;
    std::vector<double> early(types.size(), 0.0);
    std::vector<int> count(types.size(), 0);
    for (std::size_t i = 0; i < live.size(); ++i) {
      const SimJobSpec* j = live[i];
      const int k = type_of[i];
      if (k < 0 || j->submit_s >= t) continue;
      const double ramp = std::min(s.memory_free_s, j->solo_s);
      const double most = std::clamp(t - j->submit_s - ramp, 0.0, j->solo_s - ramp);
      early[static_cast<std::size_t>(k)] += static_cast<double>(j->gpus) * most;
      count[static_cast<std::size_t>(k)] += 1;
    }
    std::vector<PieceType> rtypes;
    std::vector<double> rwork;
    for (std::size_t k = 0; k < types.size(); ++k)
      if (early[k] > 0) {
        rtypes.push_back({types[k].mib, types[k].demand, count[k]});
        rwork.push_back(early[k]);
      }
    double covered = 0;  // programme(D̄), from above
    if (!rtypes.empty()) {
      const Solved r = solve(rtypes, rwork, s, nodes_left);
      out.columns += r.columns;
      out.rounds += r.rounds;
      if (!std::isfinite(r.feasible_gpu_seconds)) continue;
      covered = r.feasible_gpu_seconds;
    }
    out.value_s = std::max(out.value_s, t - s.origin_s + std::max(0.0, out.busy_gpu_seconds - covered) / gpus);
  }
}

}  // namespace

std::optional<PackingBound> packing_bound(std::span<const SimJobSpec> jobs, const PackingBoundSetup& s) {
  std::vector<double> key{static_cast<double>(s.gpus), static_cast<double>(s.gpus_per_node),
                          static_cast<double>(s.gpu_memory_mib), s.memory_free_s, s.origin_s,
                          s.floor.per_corunner, s.floor.busy_floor, static_cast<double>(s.cuts),
                          static_cast<double>(s.progress_cuts)};
  for (const SimJobSpec& j : jobs)
    key.insert(key.end(), {j.submit_s, static_cast<double>(j.gpus), static_cast<double>(j.true_mib), j.solo_s, j.smact, j.busy});
  static std::mutex memo_mutex;
  static std::deque<std::pair<std::vector<double>, std::optional<PackingBound>>> memo;
  {
    const std::lock_guard lock(memo_mutex);
    for (const auto& [k, v] : memo)
      if (k == key) return v;
  }
  std::optional<PackingBound> result = compute_packing_bound(jobs, s);
  const std::lock_guard lock(memo_mutex);
  memo.emplace_back(std::move(key), result);
  if (memo.size() > kMemo) memo.pop_front();
  return result;
}

std::optional<PackingBound> compute_packing_bound(std::span<const SimJobSpec> jobs, const PackingBoundSetup& s) {
  if (s.gpus < 1 || s.gpu_memory_mib < 1) throw std::invalid_argument("packing bound: no GPUs");
  // Jobs that can complete, latest submissions last (for the cuts).
  std::vector<const SimJobSpec*> live;
  for (const SimJobSpec& j : jobs)
    if (j.gpus >= 1 && j.gpus <= s.gpus_per_node && j.true_mib <= s.gpu_memory_mib) live.push_back(&j);
  if (live.empty()) return std::nullopt;
  std::stable_sort(live.begin(), live.end(), [](const SimJobSpec* a, const SimJobSpec* b) { return a->submit_s < b->submit_s; });

  PackingBound out;
  std::vector<std::size_t> cut_at{0};  // index into live: the cut's first job
  for (int c = 1; c < s.cuts; ++c) {
    std::size_t i = live.size() * static_cast<std::size_t>(c) / static_cast<std::size_t>(s.cuts);
    while (i > 0 && i < live.size() && live[i - 1]->submit_s == live[i]->submit_s) --i;  // whole submit times
    if (i > cut_at.back() && i < live.size()) cut_at.push_back(i);
  }
  std::int64_t nodes_left = kTotalNodes;
  std::vector<PieceType> origin_types;  // the origin cut's grouping, for the progress cuts
  std::vector<int> origin_type_of;
  for (std::size_t c = 0; c < cut_at.size() && nodes_left > 0; ++c) {
    std::vector<PieceType> types;
    std::vector<double> work;
    group(std::span(live).subspan(cut_at[c]), s, types, work, c == 0 ? &origin_type_of : nullptr);
    if (types.empty()) continue;
    const Seconds start = c == 0 ? s.origin_s : live[cut_at[c]]->submit_s;
    // Running each piece alone takes Σ work GPU-seconds, so the programme is at most that: a cut
    // that could not beat the best so far even then is skipped.
    double alone = 0;
    for (double w : work) alone += w;
    if (c > 0 && start - s.origin_s + alone / static_cast<double>(s.gpus) <= out.value_s) continue;
    const Solved r = solve(types, work, s, nodes_left);
    const double after = r.gpu_seconds / static_cast<double>(s.gpus);
    out.value_s = std::max(out.value_s, start - s.origin_s + after);
    out.columns += r.columns;
    out.rounds += r.rounds;
    if (c == 0) {
      out.work_s = after;
      out.busy_gpu_seconds = r.gpu_seconds;
      out.types = static_cast<int>(types.size());
      out.gap = r.gap;
      origin_types = types;
    }
  }
  progress_cuts(live, origin_types, origin_type_of, s, out, nodes_left);
  return out;
}

}  // namespace colo::sim
