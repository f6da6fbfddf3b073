#include "sim/engine/engine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

// The event loop: every instant's events and submissions, then one decision.

namespace colo::sim::detail {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

Engine::Engine(const SimConfig& cfg, std::span<const SimJobSpec> jobs)
    : cfg_(cfg), jobs_(jobs), sched_(cfg.scheduler), runs_(jobs.size()), out_(jobs.size()), queued_since_(jobs.size()) {
  if (cfg.gpus < 1) throw std::invalid_argument("simulate: need at least one GPU");
  if (cfg.nodes < 1 || cfg.gpus % cfg.nodes != 0)
    throw std::invalid_argument("simulate: the GPUs must split evenly into the nodes");
  if (cfg.gpu_memory_mib < 1) throw std::invalid_argument("simulate: GPU memory must be positive");
  if (cfg.smact_window_s < 1) throw std::invalid_argument("simulate: SMACT window must be ≥ 1 s");
  if (const std::string why = time_slots_problem(cfg.slots); !why.empty())
    throw std::invalid_argument("simulate: time slots: " + why);
  if (!(cfg.checkpoint.save_s >= 0 && cfg.checkpoint.restore_s >= 0 && std::isfinite(cfg.checkpoint.save_s) &&
        std::isfinite(cfg.checkpoint.restore_s)))
    throw std::invalid_argument("simulate: checkpoint save and restore times must be finite and ≥ 0");
  for (size_t i = 1; i < jobs.size(); ++i)
    if (jobs[i].submit_s < jobs[i - 1].submit_s) throw std::invalid_argument("simulate: jobs not sorted by submit time");
  model_ = cfg.sharing == SharingKind::Mps ? make_mps_model(cfg.mps) : make_streams_model(cfg.streams);
  // MIG: every GPU split into the layout's instances, each a slot of its own for the core.
  per_ = cfg.mig.empty() ? 1 : static_cast<int>(cfg.mig.size());
  slots_ = cfg.gpus * per_;
  gpus_.resize(static_cast<size_t>(slots_));
  window_.resize(static_cast<size_t>(slots_));
  snaps_.resize(static_cast<size_t>(slots_));
  used_view_.assign(static_cast<size_t>(slots_), 0);
  power_.resize(static_cast<size_t>(cfg.gpus));
  for (int g = 0; g < slots_; ++g) {
    GpuSnapshot& s = snaps_[static_cast<size_t>(g)];
    const int phys = g / per_;
    s.index = g;
    s.uuid = cfg.mig.empty() ? fmt::format("SIM-GPU-{}", g) : fmt::format("SIM-GPU-{}-MIG-{}", phys, g % per_);
    s.node = phys / (cfg.gpus / cfg.nodes);
    s.total_mib = cfg.mig.empty() ? cfg.gpu_memory_mib : cfg.mig[static_cast<size_t>(g % per_)].memory_mib;
    s.mode = !cfg.mig.empty() ? SharingMode::MigInstance
             : cfg.sharing == SharingKind::Mps ? SharingMode::Mps : SharingMode::Plain;
    s.smact = 0.0;
    largest_mib_ = std::max(largest_mib_, s.total_mib);
    total_mib_ += static_cast<double>(s.total_mib);
  }
  smact_cap_ = cfg.scheduler.policy.smact_cap;  // the policy's SMACT condition, if it has one
  for (size_t i = 0; i < jobs.size(); ++i) {
    JobOutcome& o = out_[i];
    o.id = i;
    o.name = jobs[i].name;
    o.submit_s = jobs[i].submit_s;
  }
}

SimResult Engine::run() {
  const size_t n = jobs_.size();
  size_t processed = 0, since_progress = 0;
  while (true) {
    const Seconds t_ev = heap_.empty() ? kInf : heap_.top().t;
    const Seconds t_sub = next_submit_ < n ? jobs_[next_submit_].submit_s : kInf;
    const Seconds t = std::min(t_ev, t_sub);
    if (t == kInf) break;
    now_ = t;
    // One batch: everything that happens at instant t, then (maybe) one decision.
    for (bool more = true; more;) {
      more = false;
      while (!heap_.empty() && heap_.top().t == t && heap_.top().type != Ev::Wake) {
        const Event e = heap_.top();
        heap_.pop();
        handle(e);
        ++processed;
        more = true;
      }
      while (next_submit_ < n && jobs_[next_submit_].submit_s == t) {
        submit(next_submit_++);
        ++processed;
        more = true;
      }
      if (more) continue;
      while (!heap_.empty() && heap_.top().t == t && heap_.top().type == Ev::Wake) {
        const Event e = heap_.top();
        heap_.pop();
        handle(e);
        ++processed;
        more = true;
      }
      if (!heap_.empty() && heap_.top().t == t) more = true;
    }
    events_ += processed;
    since_progress += processed;
    processed = 0;
    if (cfg_.progress && since_progress >= cfg_.progress_every) {
      cfg_.progress(finished_, n);
      since_progress = 0;
    }
    const bool waiting = queued() > 0;
    if (waiting && (dirty_ || cfg_.eager_decisions)) decide();
    dirty_ = false;
    evaluate_slots();
    if (cfg_.eager_decisions && queued() > 0) push_wake(static_cast<long>(std::floor(now_)) + 1);
    if (queued() > 0) check_deadlock();
    record_point();
  }
  // Nothing left that could change the core's answer, yet jobs wait: they never will start.
  fail_queued("the policy never admitted it and nothing else was left to happen");
  return result();
}

void Engine::submit(size_t i) {
  const SimJobSpec& s = jobs_[i];
  Job j;
  j.id = i;
  j.user = "sim";
  j.command = s.name;
  j.gpus = s.gpus;
  j.need = s.need;
  j.solo_smact = s.smact;  // the model's own solo SMACT: what a perfect activity predictor says
  j.submit_time = s.submit_s;
  j.checkpoint = cfg_.slots.enabled();
  // A new head; behind a waiting head it cannot start, unless backfilling lets it.
  if (queued() == 0 || cfg_.scheduler.backfill.max_overtakes > 0) dirty_ = true;
  queued_since_[i] = s.submit_s;
  mainq_.push_back(std::move(j));
  enqueued();
}

Job Engine::take_from(std::vector<Job>& q, size_t& head, JobId id, bool& found) {
  found = false;
  if (head < q.size() && q[head].id == id) {
    found = true;
    return std::move(q[head++]);
  }
  for (size_t k = head; k < q.size(); ++k)
    if (q[k].id == id) {
      found = true;
      Job j = std::move(q[k]);
      q.erase(q.begin() + static_cast<std::ptrdiff_t>(k));
      return j;
    }
  return {};
}

Job Engine::take(JobId id) {
  bool found = false;
  Job j = take_from(recq_, rec_head_, id, found);
  if (!found) j = take_from(mainq_, main_head_, id, found);
  if (!found) throw std::logic_error(fmt::format("simulate: scheduler returned job {} that is not queued", id));
  return j;
}

void Engine::compact(std::vector<Job>& q, size_t& head) {
  if (head > 1024 && head * 2 > q.size()) {
    q.erase(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(head));
    head = 0;
  }
}

void Engine::handle(const Event& e) {
  switch (e.type) {
    case Ev::Ramp: on_ramp(e.job, e.version); break;
    case Ev::Finish: on_finish(e.job, e.version); break;
    case Ev::OomNoticed: on_oom_noticed(e.job, e.version); break;
    case Ev::CheckpointExit: on_checkpoint_exit(e.job, e.version); break;
    case Ev::SlotCheck: on_slot_check(e.job, e.version); break;
    case Ev::Wake: on_wake(static_cast<long>(e.t)); break;
  }
}

void Engine::fail(JobId j, std::string reason) {
  JobOutcome& o = out_[j];
  o.failed = true;
  o.fail_reason = std::move(reason);
  o.finish_s = now_;
  ++finished_;
}

}  // namespace colo::sim::detail
