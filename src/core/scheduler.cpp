#include "core/scheduler.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "core/policy/node_weight.h"

namespace colo {

namespace {

// Decision-round view of the GPUs: the ledger's numbers plus what this round placed already.
struct Round {
  std::vector<Candidate> cands;
  std::vector<MiB> usable_totals;  // total memory of each healthy, undrained GPU
  // Whether each server's GPUs come as one run in the snapshot list (a cluster's do); otherwise a
  // multi-GPU job's candidates are sorted by server before its per-server choice.
  bool nodes_grouped = true;
  MiB largest_usable_total = 0;
  int usable_count = 0;
  int usable_on_one_node = 0;  // the most usable GPUs any one server has
  bool many_nodes = false;

  // Whether at least `gpus` usable GPUs have `mib` or more in total. A one-GPU job (nearly every
  // call, once per queued job the backfill loop looks at) needs no count.
  bool enough_gpus_of(MiB mib, int gpus) const {
    if (mib > largest_usable_total) return false;
    if (gpus <= 1) return true;
    return std::count_if(usable_totals.begin(), usable_totals.end(), [&](MiB t) { return t >= mib; }) >= gpus;
  }
};

// Each candidate's server rank (node-weight policy): from what colo slurm node-weight reads on
// the node, the GPUs' used memory and windowed SMACT.
void rank_nodes(Round& r, const SchedulerInput& in, double smact_cap) {
  std::map<int, std::vector<GpuLoad>> loads;
  for (const GpuSnapshot& g : in.gpus)
    loads[g.node].push_back(GpuLoad{g.total_mib, g.used_mib, g.smact, g.healthy && !g.drained});
  std::map<int, int> weight;
  for (const auto& [node, l] : loads) weight[node] = node_weight(l, smact_cap);
  for (Candidate& c : r.cands) c.node_weight = weight[c.gpu->node];
}

Round make_round(const SchedulerInput& in) {
  Round r;
  r.cands.reserve(in.gpus.size());
  r.usable_totals.reserve(in.gpus.size());
  for (size_t i = 0; i < in.gpus.size(); ++i) {
    const GpuSnapshot& g = in.gpus[i];
    // Built in place: a Candidate assembled on the stack and then copied in cost a store-forwarding
    // stall per GPU per decision (a third of the 2 000-GPU simulation's time, perf annotate).
    Candidate& c = r.cands.emplace_back();
    c.gpu = &g;
    c.position = static_cast<int>(i);
    const Ledger::GpuView held = in.ledger->view(g.index);
    c.available_mib = Ledger::available(g, held.reserved);
    c.jobs = std::max<int>(held.jobs, static_cast<int>(g.running.size()));
    c.held_alone = held.alone;
    c.placed_smact = held.smact;
    if (g.healthy && !g.drained) {
      r.usable_totals.push_back(g.total_mib);
      r.largest_usable_total = std::max(r.largest_usable_total, g.total_mib);
      ++r.usable_count;
    }
    r.many_nodes = r.many_nodes || g.node != in.gpus.front().node;
  }
  if (!r.many_nodes) {
    r.usable_on_one_node = r.usable_count;
  } else {
    // Per-server counts, from the runs of one server's GPUs (a cluster's GPUs come grouped by
    // server, so there is one run per server): the runs sorted by server and merged. One
    // allocation per decision, where a map of servers cost one per server.
    std::vector<std::pair<int, int>> runs;  // (node, usable GPUs in the run)
    for (size_t i = 0; i < in.gpus.size(); ++i) {
      const GpuSnapshot& g = in.gpus[i];
      const bool starts = i == 0 || g.node != in.gpus[i - 1].node;
      if (starts) runs.emplace_back(g.node, 0);
      if (g.healthy && !g.drained) ++runs.back().second;
    }
    if (!std::is_sorted(runs.begin(), runs.end())) std::sort(runs.begin(), runs.end());
    for (size_t i = 0; i < runs.size();) {
      int count = 0;
      size_t j = i;
      for (; j < runs.size() && runs[j].first == runs[i].first; ++j) count += runs[j].second;
      r.nodes_grouped = r.nodes_grouped && j == i + 1;
      r.usable_on_one_node = std::max(r.usable_on_one_node, count);
      i = j;
    }
  }
  return r;
}

PlacementRequest make_request(const Job& job, const Policy& policy, const Round& round, bool recovery) {
  PlacementRequest req;
  req.job = &job;
  req.recovery = recovery;
  req.need_mib = job.need.mib;
  if (recovery) {
    req.alone = job.recovery_alone;
    if (job.recovery_need_mib) req.need_mib = job.recovery_need_mib;
  }
  if (policy.whole_gpus) req.alone = true;
  // A need that not enough GPUs could hold even when empty (margin on top, unless this is a
  // recovery retry) can only mean "whole GPUs"; without this the job would block the queue forever.
  if (req.need_mib && (policy.conditions.enabled || recovery)) {
    const MiB margin = recovery ? 0 : policy.conditions.margin_mib;
    if (!round.enough_gpus_of(*req.need_mib + margin, job.gpus)) req.alone = true;
  }
  return req;
}

// Why `job` fits on fewer than job.gpus GPUs: each GPU is charged to the first filter that
// refused it, and each filter words its own refusals.
std::string explain(const Job& job, const PlacementRequest& req, const std::vector<FilterPtr>& filters,
                    const Round& round, int qualifying) {
  std::vector<std::vector<const Candidate*>> refused(filters.size());
  for (const Candidate& c : round.cands)
    for (size_t f = 0; f < filters.size(); ++f)
      if (!filters[f]->admit(c, req)) {
        refused[f].push_back(&c);
        break;
      }
  std::string why;
  if (job.gpus > 1) why = fmt::format("needs {} GPUs at once, {} qualif{}", job.gpus, qualifying, qualifying == 1 ? "ies" : "y");
  for (size_t f = 0; f < filters.size(); ++f)
    if (!refused[f].empty()) why += (why.empty() ? "" : "; ") + filters[f]->why_not(refused[f], req);
  if (why.empty()) why = "no GPU";
  return req.recovery ? "recovery: " + why : why;
}

}  // namespace

Scheduler::Scheduler(SchedulerConfig cfg) : cfg_(std::move(cfg)) {
  if (!cfg_.policy.scorer) throw std::invalid_argument("scheduler: policy has no scorer");
}

Decision Scheduler::decide(const SchedulerInput& in, SchedulerState& state) const {
  if (!in.ledger) throw std::invalid_argument("scheduler: no ledger");
  Decision out;
  Round round = make_round(in);
  if (cfg_.policy.node_weights) rank_nodes(round, in, cfg_.policy.conditions.smact_cap);
  const FilterPtr base = usable();
  const FilterPtr idle = idle_only();
  const int n = static_cast<int>(round.cands.size());
  // Scratch reused by every try_place of this decision (one allocation each, not one per try).
  std::vector<FilterPtr> filters;
  std::vector<int> admitted;                    // positions that passed the filters so far
  std::vector<std::pair<double, int>> ranked;  // (score, position)
  admitted.reserve(round.cands.size());
  ranked.reserve(round.cands.size());

  // Places one job or returns false. Fills `out` and updates the round on success; on failure
  // records the job as the blocked head unless `quiet` (a backfill candidate).
  auto try_place = [&](const Job& job, bool recovery, bool quiet = false) -> bool {
    if (job.gpus < 1 || job.gpus > round.usable_on_one_node) {
      out.rejections.push_back({job.id, round.many_nodes
                                            ? fmt::format("needs {} GPU(s) on one server, the largest has {} usable",
                                                          job.gpus, round.usable_on_one_node)
                                            : fmt::format("needs {} GPU(s), this server has {} usable", job.gpus,
                                                          round.usable_count)});
      return true;  // not blocking: the caller fails it
    }
    const PlacementRequest req = make_request(job, cfg_.policy, round, recovery);
    // A request for whole GPUs needs idle ones and nothing else. Recovery requests bypass the
    // policy's conditions: loose recovery wants its escalated need free (thesis §7.2), no more.
    filters.assign(1, base);
    if (req.alone) {
      filters.push_back(idle);
      // Alone where its need fits a GPU's total, if enough GPUs are that large (MIG instances
      // differ); otherwise any idle GPU (the whole-GPU fallback).
      if (req.need_mib && round.enough_gpus_of(*req.need_mib, job.gpus)) filters.push_back(holds(*req.need_mib));
    } else if (recovery)
      filters.push_back(fits_memory(0, cfg_.policy.conditions.min_free_unknown_mib));
    else
      filters.insert(filters.end(), cfg_.policy.filters.begin(), cfg_.policy.filters.end());

    const ScoreContext ctx{n, state.rr_next};
    // Filter by filter over the GPUs still in (the admitted set is the same in any order). Once
    // too few are left the job waits; only an explanation needs the count to the end.
    admitted.resize(round.cands.size());
    std::iota(admitted.begin(), admitted.end(), 0);
    for (const FilterPtr& f : filters) {
      f->retain(round.cands, req, admitted);
      // The multi-GPU server choice below walks `ranked` as runs of servers: order is the contract.
      assert(std::is_sorted(admitted.begin(), admitted.end()) && "Filter::retain must keep the order");
      if (static_cast<int>(admitted.size()) < job.gpus && !in.explain) break;
    }
    if (static_cast<int>(admitted.size()) < job.gpus) {
      if (quiet) return false;
      out.blocked = Blocked{job.id, recovery, {}};
      if (in.explain) out.blocked->reason = explain(job, req, filters, round, static_cast<int>(admitted.size()));
      return false;
    }
    // Scorers see only GPUs that passed every filter (scorers.h).
    ranked.clear();
    for (int pos : admitted)
      ranked.emplace_back(cfg_.policy.scorer->score(round.cands[static_cast<size_t>(pos)], req, ctx), pos);
    const auto better = [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    };
    if (job.gpus > 1 && round.many_nodes) {
      // All of a job's GPUs on one server: the server whose job.gpus-th best GPU ranks highest
      // (found per server with nth_element: linear in the candidates, no global sort). Positions
      // are unique, so the winner does not depend on the order servers are looked at.
      const auto k = static_cast<std::ptrdiff_t>(job.gpus);
      // `ranked` is in snapshot order; where a server's GPUs are not listed together, a stable sort
      // by server makes each server's candidates one run of it (keeping their order).
      const auto node_of = [&](const std::pair<double, int>& e) { return round.cands[static_cast<size_t>(e.second)].gpu->node; };
      if (!round.nodes_grouped)
        std::stable_sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) { return node_of(a) < node_of(b); });
      bool found = false;
      size_t best_from = 0, best_to = 0;
      for (size_t from = 0; from < ranked.size();) {
        size_t to = from + 1;
        while (to < ranked.size() && node_of(ranked[to]) == node_of(ranked[from])) ++to;
        if (static_cast<std::ptrdiff_t>(to - from) >= k) {
          const auto first = ranked.begin() + static_cast<std::ptrdiff_t>(from);
          std::nth_element(first, first + (k - 1), ranked.begin() + static_cast<std::ptrdiff_t>(to), better);
          if (!found || better(first[k - 1], ranked[best_from + static_cast<size_t>(k - 1)])) {
            best_from = from;
            best_to = to;
          }
          found = true;
        }
        from = to;
      }
      if (found) {
        const auto first = ranked.begin() + static_cast<std::ptrdiff_t>(best_from);
        std::partial_sort(first, first + k, ranked.begin() + static_cast<std::ptrdiff_t>(best_to), better);
        // To the front (std::copy may shift left over itself, not onto its own source).
        if (best_from != 0) std::copy(first, first + k, ranked.begin());
      }
      if (!found) {
        if (quiet) return false;
        out.blocked = Blocked{job.id, recovery, {}};
        if (in.explain)
          out.blocked->reason = fmt::format("needs {} GPUs on one server, {} qualify but no server has {}", job.gpus,
                                            ranked.size(), job.gpus);
        return false;
      }
    } else {
      // Only the best job.gpus candidates matter: a partial sort keeps large servers cheap.
      std::partial_sort(ranked.begin(), ranked.begin() + job.gpus, ranked.end(), better);
    }

    Placement p;
    p.job = job.id;
    p.recovery = recovery;
    p.alone = req.alone;
    p.reserve_mib = req.need_mib.value_or(cfg_.policy.conditions.min_free_unknown_mib);
    for (int k = 0; k < job.gpus; ++k) {
      Candidate& c = round.cands[static_cast<size_t>(ranked[static_cast<size_t>(k)].second)];
      p.gpu_indices.push_back(c.gpu->index);
      c.available_mib = std::max<MiB>(c.available_mib - p.reserve_mib, 0);
      c.jobs += 1;
      c.held_alone = c.held_alone || p.alone;
      c.placed_smact += job.solo_smact.value_or(0.0);
      state.rr_next = (c.position + 1) % std::max(n, 1);
    }
    out.placements.push_back(std::move(p));
    return true;
  };

  for (const Job& job : in.recovery_queue)
    if (!try_place(job, true)) return out;  // the recovery head waits; so does everyone else
  size_t k = 0;
  for (; k < in.main_queue.size(); ++k)
    if (!try_place(in.main_queue[k], false)) break;
  if (k == in.main_queue.size()) {
    state.waiting_head.reset();
    return out;
  }
  // The head waits. Backfilling: later jobs may start where they fit, a bounded number of times.
  const Job& head = in.main_queue[k];
  if (state.waiting_head != head.id) {
    state.waiting_head = head.id;
    state.overtakes = 0;
  }
  const Backfill& bf = cfg_.backfill;
  if (bf.max_overtakes <= 0 || state.overtakes >= bf.max_overtakes) return out;
  // Availability only shrinks within a round, so the round's largest free memory bounds what any
  // job behind the head could get: most candidates are dismissed without running the filters.
  MiB most_free = 0, smallest_total = 0;
  for (const Candidate& c : round.cands)
    if (c.gpu->healthy && !c.gpu->drained) {
      most_free = std::max(most_free, c.available_mib);
      smallest_total = smallest_total == 0 ? c.gpu->total_mib : std::min(smallest_total, c.gpu->total_mib);
    }
  const Conditions& cond = cfg_.policy.conditions;
  // Only a job that goes through the memory filter is bounded so: whole-GPU policies, a policy
  // without conditions or whose filters leave memory out (a site's), and a need too large for
  // enough GPUs (placed alone on idle ones, see make_request) place without one. An unknown need
  // asks at most a GPU's whole memory free.
  const bool memory_filtered = cfg_.policy.checks_memory && !cfg_.policy.whole_gpus;
  const MiB unknown_least = std::min(cond.min_free_unknown_mib, smallest_total);
  const int end = static_cast<int>(std::min(in.main_queue.size(), k + 1 + static_cast<size_t>(std::max(bf.depth, 0))));
  for (int q = static_cast<int>(k) + 1; q < end; ++q) {
    const Job& job = in.main_queue[static_cast<size_t>(q)];
    if (memory_filtered) {
      const MiB least = job.need.mib ? *job.need.mib + cond.margin_mib : unknown_least;
      if (least > most_free && round.enough_gpus_of(least, job.gpus)) continue;
    }
    const size_t placed = out.placements.size();
    if (!try_place(job, false, true) || out.placements.size() == placed) continue;  // waits, or rejected
    out.placements.back().overtook = head.id;
    if (++state.overtakes >= bf.max_overtakes) break;
  }
  return out;
}

}  // namespace colo
