#include "sim/engine/engine.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

// Calling the scheduler core with the GPUs as the monitor would show them, and waking it when a
// GPU's SMACT window falls under the policy's cap.

namespace colo::sim::detail {

double Engine::smact_of(int g, long tick) {
  if (const WindowRt& w = window_[static_cast<size_t>(g)]; tick >= w.steady_from) return w.level;
  GpuRt& r = gpus_[static_cast<size_t>(g)];
  if (r.smact_tick != tick || r.smact_version != r.hist_version) {
    r.smact = r.hist.window_average(tick, cfg_.smact_window_s);
    r.smact_tick = tick;
    r.smact_version = r.hist_version;
  }
  return r.smact;
}

void Engine::decide() {
  const long tick = static_cast<long>(std::floor(now_));
  for (int g = 0; g < slots_; ++g) snaps_[static_cast<size_t>(g)].smact = smact_of(g, tick);
  if (cfg_.audit) {
    // Audited runs (the property tests) check the SMACT shortcuts (WindowRt, the tick cache)
    // against the history itself: the window the scheduler is shown must be the monitor's.
    for (int g = 0; g < slots_; ++g) {
      const double shown = *snaps_[static_cast<size_t>(g)].smact;
      const double exact = gpus_[static_cast<size_t>(g)].hist.window_average(tick, cfg_.smact_window_s);
      if (shown != exact)
        throw std::logic_error(fmt::format("simulator: GPU {}'s SMACT window at tick {} was shown as {}, its history says {}",
                                           g, tick, shown, exact));
    }
  }
  SchedulerInput in;
  in.recovery_queue = std::span<const Job>(recq_.data() + rec_head_, recq_.size() - rec_head_);
  in.main_queue = std::span<const Job>(mainq_.data() + main_head_, mainq_.size() - main_head_);
  in.gpus = snaps_;
  in.ledger = &ledger_;
  in.now = now_;
  Decision d = sched_.decide(in, sstate_);
  ++decisions_;
  for (const Placement& p : d.placements) launch(p, take(p.job));
  for (const Rejection& r : d.rejections) {
    Job j = take(r.job);
    transition(j, JobState::Failed);  // rejected: no GPU set could ever hold it
    fail(r.job, r.reason);
  }
  compact(recq_, rec_head_);
  compact(mainq_, main_head_);
  if (cfg_.audit) {
    for (int g = 0; g < slots_; ++g) used_view_[static_cast<size_t>(g)] = gpus_[static_cast<size_t>(g)].used;
    cfg_.audit(AuditView{now_, &ledger_, snaps_, d.placements, used_view_});
  }
  watch(tick);
}

void Engine::watch(long tick) {
  for (int g : watched_) window_[static_cast<size_t>(g)].watched = false;
  watched_.clear();
  if (!smact_cap_ || cfg_.eager_decisions || queued() == 0) return;
  std::optional<long> first;
  for (int g = 0; g < slots_; ++g) {
    if (*snaps_[static_cast<size_t>(g)].smact < *smact_cap_) continue;
    WindowRt& w = window_[static_cast<size_t>(g)];
    w.watched = true;
    watched_.push_back(g);
    // Steady at or above the cap: with nothing changing it never falls below (crossing() would
    // say nullopt); a change re-asks from reshare().
    if (tick >= w.steady_from) {
      if (cfg_.audit)
        if (const auto c = crossing(g, tick))
          throw std::logic_error(fmt::format("simulator: GPU {} was skipped as steady at tick {} but its window falls under the cap at {}",
                                             g, tick, *c));
      continue;
    }
    if (auto c = crossing(g, tick); c && (!first || *c < *first)) first = c;
  }
  if (first) push_wake(*first);
}

std::optional<long> Engine::crossing(int g, long from) {
  GpuRt& r = gpus_[static_cast<size_t>(g)];
  const bool valid = r.cross_version == r.hist_version && from >= r.cross_from && (!r.cross || from < *r.cross);
  if (!valid) {
    r.cross = r.hist.first_tick_below(from, *smact_cap_, cfg_.smact_window_s);
    r.cross_from = from;
    r.cross_version = r.hist_version;
  }
  return r.cross;
}

void Engine::push_wake(long tick) {
  if (pending_wakes_.insert(tick).second) heap_.push({static_cast<Seconds>(tick), Ev::Wake, seq_++, 0, 0});
}

void Engine::on_wake(long tick) {
  pending_wakes_.erase(tick);
  if (queued() == 0) return;
  if (cfg_.eager_decisions) {
    dirty_ = true;
    return;
  }
  std::optional<long> next;
  for (int g : watched_) {
    if (smact_of(g, tick) < *smact_cap_) {
      dirty_ = true;
      return;
    }
    if (auto c = crossing(g, tick); c && (!next || *c < *next)) next = c;
  }
  if (next) push_wake(*next);
}

void Engine::check_deadlock() {
  if (residents_ > 0 || next_submit_ < jobs_.size()) return;
  const long tick = static_cast<long>(std::floor(now_));
  for (int g = 0; g < slots_; ++g)
    if (smact_of(g, tick) > 0) return;
  fail_queued("the policy never admitted it on an idle server");
}

void Engine::fail_queued(const std::string& why) {
  for (auto* q : {&recq_, &mainq_}) {
    const size_t head = q == &recq_ ? rec_head_ : main_head_;
    for (size_t k = head; k < q->size(); ++k) fail((*q)[k].id, why);
    q->clear();
  }
  rec_head_ = main_head_ = 0;
}

}  // namespace colo::sim::detail
