#include "sim/engine/engine.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "sim/bounds/lower_bound.h"
#include "sim/bounds/energy_bound.h"
#include "sim/bounds/packing_bound.h"

// The timeline for `colo sim --report` and the metrics of SimResult.

namespace colo::sim::detail {

void Engine::end_span(const Attempt& a, const char* state) {
  if (!cfg_.timeline || a.span >= cfg_.timeline->attempts.size()) return;
  AttemptSpan& sp = cfg_.timeline->attempts[a.span];
  sp.end = now_;
  sp.state = state;
}

void Engine::record_point() {
  SimTimeline* tl = cfg_.timeline;
  if (!tl) return;
  TimelinePoint p;
  p.t = now_;
  p.queue = queued();
  for (const GpuRt& g : gpus_) {
    p.used_mib.push_back(g.used);
    p.smact.push_back(g.hist.level());
  }
  if (!tl->points.empty()) {
    const TimelinePoint& last = tl->points.back();
    if (last.queue == p.queue && last.used_mib == p.used_mib && last.smact == p.smact) return;
  }
  tl->points.push_back(std::move(p));
}

SimResult Engine::result() {
  SimResult r;
  r.jobs = jobs_.size();
  r.oom_crashes = oom_crashes_;
  r.decisions = decisions_;
  r.events = events_;
  r.max_jobs_per_gpu = max_jobs_per_gpu_;
  r.policy = cfg_.scheduler.policy.describe();
  if (const Backfill& bf = cfg_.scheduler.backfill; bf.max_overtakes > 0)
    r.policy += fmt::format(", backfill {} per head (depth {})", bf.max_overtakes, bf.depth);
  if (cfg_.slots.enabled())
    r.policy += fmt::format(", time slots {:g} s (checkpoint notice {:g} s)", cfg_.slots.slot_s, cfg_.slots.notice_s);
  Seconds start = jobs_.empty() ? 0 : jobs_.front().submit_s, end = start;
  double wait = 0, exec = 0, jct = 0, rate_sum = 0, rate_sq = 0;
  for (const JobOutcome& o : out_) {
    if (o.finish_s >= 0) end = std::max(end, o.finish_s);
    if (o.failed) ++r.failed;
    if (!o.completed) continue;
    ++r.completed;
    wait += o.first_start_s - o.submit_s;
    exec += o.finish_s - o.first_start_s;
    jct += o.finish_s - o.submit_s;
    r.max_wait_s = std::max(r.max_wait_s, o.first_start_s - o.submit_s);
    r.max_queued_s = std::max(r.max_queued_s, o.waited_s);
    const double x = o.finish_s > o.submit_s ? jobs_[o.id].solo_s / (o.finish_s - o.submit_s) : 1.0;
    rate_sum += x;
    rate_sq += x * x;
  }
  // Undefined (NaN; null in JSON, "n/a" in text) when no job completed: there is nothing to be fair about.
  r.jain_index = rate_sq > 0 ? rate_sum * rate_sum / (static_cast<double>(r.completed) * rate_sq)
                             : std::numeric_limits<double>::quiet_NaN();
  r.checkpoints = checkpoints_;
  if (r.completed) {
    const double c = static_cast<double>(r.completed);
    r.avg_wait_s = wait / c;
    r.avg_exec_s = exec / c;
    r.avg_jct_s = jct / c;
  }
  r.makespan_s = end - start;
  double smact_seconds = 0, mem_area = 0, joules = 0;
  for (int k = 0; k < slots_; ++k) {
    GpuRt& g = gpus_[static_cast<size_t>(k)];
    // A MIG instance's SMACT is its own SMs'; the GPU's is each instance's by its share of them.
    const double sm_share = cfg_.mig.empty() ? 1.0 : cfg_.mig[static_cast<size_t>(k % per_)].compute_slices / 7.0;
    smact_seconds += sm_share * g.hist.integral(end);  // nothing ran before the first submission
    mem_area += g.mem_area + static_cast<double>(g.used) * (end - g.mem_since);
  }
  for (PowerRt& p : power_) {
    const double busy = p.busy_area + (p.busy ? 1.0 : 0.0) * (end - p.since);
    const double work = p.work_area + p.work * (end - p.since);
    joules += gpu_joules(cfg_.power, end - start, busy, work);
  }
  const double gpu_seconds = static_cast<double>(cfg_.gpus) * r.makespan_s;
  r.energy_mj = joules / 1e6;
  r.smact_avg = gpu_seconds > 0 ? smact_seconds / gpu_seconds : 0;
  r.mem_util_avg = r.makespan_s > 0 ? mem_area / (r.makespan_s * total_mib_) : 0;
  // With MIG a GPU holds its instances' memory, and a job gets at most the largest instance.
  const MiB per_gpu = cfg_.mig.empty() ? cfg_.gpu_memory_mib
                                       : static_cast<MiB>(total_mib_ / std::max(1, cfg_.gpus));
  // The bounds are over the jobs this run completed: a failed job's work need not be done.
  std::vector<SimJobSpec> done;
  for (std::size_t j = 0; j < jobs_.size(); ++j)
    if (out_[j].completed) done.push_back(jobs_[j]);
  // A relaunch from a checkpoint ramps again: the progress made before a job's memory is
  // resident is one ramp only if a restore costs at least as much work as a ramp gives.
  const bool one_ramp = !cfg_.slots.enabled() || cfg_.checkpoint.restore_s >= cfg_.ramp_s;
  const Seconds memory_free = one_ramp ? cfg_.ramp_s : std::numeric_limits<double>::infinity();
  LowerBound lb = lower_bound(done, cfg_.gpus, cfg_.gpus / std::max(1, cfg_.nodes), per_gpu, memory_free, start,
                              largest_mib_);
  double busy_bound = 0;  // GPU-seconds some job is progressing
  const std::optional<SlowdownFloor> floor = cfg_.mig.empty() ? model_->slowdown_floor() : std::nullopt;
  if (floor && one_ramp && cfg_.packing_bound) {
    PackingBoundSetup ps;
    ps.gpus = cfg_.gpus;
    ps.gpus_per_node = cfg_.gpus / std::max(1, cfg_.nodes);
    ps.gpu_memory_mib = per_gpu;
    ps.memory_free_s = memory_free;
    ps.origin_s = start;
    ps.floor = *floor;
    if (const auto pb = packing_bound(done, ps)) {
      lb.packing = pb->value_s;
      busy_bound = pb->busy_gpu_seconds;
    }
  }
  r.lower_bound_s = lb.value();
  // Energy: the work term needs every GPU's SM work per second ≤ 1 unclamped, which the sharing
  // floor gives when no job's demand is below its SM activity.
  if (floor) {
    double work = 0;
    bool unclamped = true;
    for (const SimJobSpec& j : done) {
      work += static_cast<double>(j.gpus) * j.smact * j.solo_s;
      unclamped = unclamped && floor->demand(j.smact, j.busy) >= std::min(1.0, j.smact);
    }
    if (unclamped) {
      if (const auto e = energy_lower_bound(cfg_.power, cfg_.gpus, r.lower_bound_s, busy_bound, work))
        r.energy_lower_bound_mj = *e / 1e6;
    }
  }
  r.outcomes = std::move(out_);
  return r;
}

}  // namespace colo::sim::detail
