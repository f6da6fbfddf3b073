#include "sim/engine/engine.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

// A launched job's life: launch (from its checkpoint if it has one), memory ramp or OOM crash,
// finish, and the crash being noticed (recovery or failure).

namespace colo::sim::detail {

void Engine::launch(const Placement& p, Job job) {
  const SimJobSpec& s = jobs_[job.id];
  transition(job, JobState::Placed);
  transition(job, JobState::Running);
  Attempt& a = runs_[job.id];
  a.core = std::move(job);
  a.gpus = p.gpu_indices;
  // From its last checkpoint (reading it back costs restore_s), else from the start.
  a.remaining = a.saved ? *a.saved + cfg_.checkpoint.restore_s : s.solo_s;
  a.saving.reset();
  a.rate = 0;
  a.last = now_;
  a.attempt += 1;
  a.reserve = p.reserve_mib;
  a.active = true;
  a.ramped = false;
  a.crashed_alone = false;
  a.recovery_alone = p.recovery && p.alone;
  JobOutcome& o = out_[a.core.id];
  o.waited_s += now_ - queued_since_[a.core.id];
  if (o.first_start_s < 0) o.first_start_s = now_;
  o.last_start_s = now_;
  o.attempts = a.core.attempts;
  o.gpus = a.gpus;
  settle_on(a.gpus);
  for (int g : a.gpus) {
    ledger_.reserve(a.core.id, g, p.reserve_mib, p.alone, now_, a.core.solo_smact);
    auto& running = snaps_[static_cast<size_t>(g)].running;
    running.push_back(a.core.id);
    // Per physical GPU: with MIG a GPU's jobs are spread over its instances (slots g / per_).
    int on_gpu = 0;
    const int first = g / per_ * per_;
    for (int k = first; k < first + per_; ++k) on_gpu += static_cast<int>(snaps_[static_cast<size_t>(k)].running.size());
    max_jobs_per_gpu_ = std::max(max_jobs_per_gpu_, on_gpu);
    gpus_[static_cast<size_t>(g)].active.push_back(a.core.id);
  }
  ++residents_;
  if (SimTimeline* tl = cfg_.timeline) {
    a.span = tl->attempts.size();
    AttemptSpan sp{a.core.id, static_cast<int>(a.attempt), a.gpus, now_, -1, "", false};
    for (int g : a.gpus) {
      const auto& running = snaps_[static_cast<size_t>(g)].running;
      if (running.size() < 2) continue;
      sp.collocated = true;  // and every job already there now shares with it
      for (JobId other : running)
        if (other != a.core.id && runs_[other].span < tl->attempts.size()) tl->attempts[runs_[other].span].collocated = true;
    }
    tl->attempts.push_back(std::move(sp));
  }
  reshare(a.gpus);
  heap_.push({now_ + std::min(cfg_.ramp_s, s.solo_s), Ev::Ramp, seq_++, a.core.id, a.attempt});
  // A recovery retry runs to its end: requeued, it would lose what its recovery asked for.
  if (a.core.checkpoint && !p.recovery) {
    a.slot = SlotClock{now_, std::nullopt};
    heap_.push({*next_slot_step(cfg_.slots, a.slot), Ev::SlotCheck, seq_++, a.core.id, a.attempt});
  }
}

void Engine::settle(JobId j) {
  Attempt& a = runs_[j];
  a.remaining = std::max(0.0, a.remaining - (now_ - a.last) * a.rate);
  a.last = now_;
}

void Engine::settle_on(const std::vector<int>& gs) {
  for (int g : gs)
    for (JobId j : gpus_[static_cast<size_t>(g)].active) settle(j);
}

void Engine::set_used(int g, MiB used) {
  GpuRt& r = gpus_[static_cast<size_t>(g)];
  r.mem_area += static_cast<double>(r.used) * (now_ - r.mem_since);
  r.mem_since = now_;
  r.used = used;
  snaps_[static_cast<size_t>(g)].used_mib = used;
}

void Engine::detach(JobId j, const std::vector<int>& gs, bool from_running_list) {
  for (int g : gs) {
    auto& act = gpus_[static_cast<size_t>(g)].active;
    act.erase(std::remove(act.begin(), act.end(), j), act.end());
    if (from_running_list) {
      auto& run = snaps_[static_cast<size_t>(g)].running;
      run.erase(std::remove(run.begin(), run.end(), j), run.end());
    }
  }
}

void Engine::on_ramp(JobId j, std::uint64_t attempt) {
  Attempt& a = runs_[j];
  if (!a.active || a.ramped || a.attempt != attempt) return;
  const SimJobSpec& s = jobs_[j];
  bool fits = true;
  for (int g : a.gpus) fits = fits && gpus_[static_cast<size_t>(g)].used + s.true_mib <= snaps_[static_cast<size_t>(g)].total_mib;
  if (fits) {
    a.ramped = true;
    for (int g : a.gpus) {
      set_used(g, gpus_[static_cast<size_t>(g)].used + s.true_mib);
      ledger_.observe(j, g, s.true_mib);
    }
    if (a.recovery_alone && cfg_.scheduler.recovery.share_after_peak) {
      // Its peak is known now: others may join beside it (observed peak + the policy's margin).
      const MiB keep = s.true_mib + cfg_.scheduler.policy.conditions.margin_mib;
      for (int g : a.gpus) ledger_.share(j, g, keep);
      a.recovery_alone = false;
      dirty_ = true;
    }
    return;
  }
  // CUDA out of memory: the process dies; the daemon notices after the detection delay and
  // until then still counts it (ledger, running list).
  a.crashed_alone = true;
  for (int g : a.gpus) a.crashed_alone = a.crashed_alone && snaps_[static_cast<size_t>(g)].running.size() == 1;
  settle_on(a.gpus);
  detach(j, a.gpus, false);
  a.active = false;
  ++a.version;  // its pending finish event is void
  reshare(a.gpus);
  ++oom_crashes_;
  ++out_[j].oom_crashes;
  end_span(a, "oom");
  heap_.push({now_ + cfg_.oom_detect_s, Ev::OomNoticed, seq_++, j, a.attempt});
}

void Engine::on_finish(JobId j, std::uint64_t version) {
  Attempt& a = runs_[j];
  if (!a.active || a.version != version) return;
  if (!a.ramped) {  // its ramp and its end coincide (to rounding): allocate first
    on_ramp(j, a.attempt);
    if (!a.active) return;
  }
  settle_on(a.gpus);
  a.remaining = 0;
  a.active = false;
  detach(j, a.gpus, true);
  for (int g : a.gpus) set_used(g, gpus_[static_cast<size_t>(g)].used - jobs_[j].true_mib);
  ledger_.release(j);
  --residents_;
  transition(a.core, JobState::Done);
  JobOutcome& o = out_[j];
  o.completed = true;
  o.finish_s = now_;
  end_span(a, o.oom_crashes > 0 ? "recovered" : "done");
  ++finished_;
  reshare(a.gpus);
  dirty_ = true;
}

int Engine::holders_on_one_node(MiB mib) const {
  std::map<int, int> per_node;
  int most = 0;
  for (const GpuSnapshot& g : snaps_)
    if (g.total_mib >= mib) most = std::max(most, ++per_node[g.node]);
  return most;
}

void Engine::on_oom_noticed(JobId j, std::uint64_t attempt) {
  Attempt& a = runs_[j];
  if (a.attempt != attempt) return;
  detach(j, a.gpus, true);
  ledger_.release(j);
  --residents_;
  transition(a.core, JobState::Oom);
  // Alone on its GPU(s) and still out of memory, and no server has as many GPUs (instances) that
  // large as the job needs: nothing will hold it. (A 2-GPU job on a layout with one large instance
  // per GPU would otherwise be retried on the small ones forever.)
  const int holders = holders_on_one_node(jobs_[j].true_mib);
  if (a.crashed_alone && holders < a.core.gpus) {
    transition(a.core, JobState::Failed);
    if (jobs_[j].true_mib > largest_mib_)
      fail(j, per_ > 1 ? fmt::format("needs {} MiB, more than the largest MIG instance ({} MiB)", jobs_[j].true_mib, largest_mib_)
                       : fmt::format("needs {} MiB, more than a whole GPU", jobs_[j].true_mib));
    else
      fail(j, fmt::format("needs {} {} of {} MiB on one server; the largest server has {}", a.core.gpus,
                          per_ > 1 ? "MIG instances" : "GPUs", jobs_[j].true_mib, holders));
  } else if (!cfg_.recover_ooms) {
    transition(a.core, JobState::Failed);
    fail(j, "out of memory (no recovery)");
  } else {
    // Alone on a smaller MIG instance: the retry asks for more than that instance holds.
    std::optional<MiB> alone_on;
    if (a.crashed_alone)
      for (int g : a.gpus) alone_on = std::min(alone_on.value_or(snaps_[static_cast<size_t>(g)].total_mib),
                                               snaps_[static_cast<size_t>(g)].total_mib);
    plan_recovery(a.core, cfg_.scheduler.recovery, a.reserve, std::nullopt, largest_mib_, alone_on);
    queued_since_[j] = now_;
    recq_.push_back(std::move(a.core));
    enqueued();
  }
  dirty_ = true;
}

}  // namespace colo::sim::detail
