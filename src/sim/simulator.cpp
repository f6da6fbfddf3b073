#include "sim/simulator.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <stdexcept>
#include <unordered_set>

#include <fmt/format.h>

#include "sim/activity_history.h"
#include "sim/lower_bound.h"

namespace colo::sim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Share of a slot (in solo seconds of work) that the slot must add to a job's checkpoint before
// the job is stopped for another. Any positive bound makes every job finish; a tenth keeps a job
// slowed down by many co-runners from spending most of its slots reading its checkpoint back
// (assumption).
constexpr double kMinSlotProgress = 0.1;

// Event kinds, in the order they are handled when they fall on the same instant: memory
// ramps before completions (a job whose ramp and end coincide is checked first), then crash
// notices, checkpointed exits and time-slot checks, then (outside the heap) submissions, then
// monitor wake-ups.
enum class Ev : std::uint8_t { Ramp = 0, Finish = 1, OomNoticed = 2, CheckpointExit = 3, SlotCheck = 4, Wake = 5 };

struct Event {
  Seconds t;
  Ev type;
  std::uint64_t seq;
  JobId job;
  std::uint64_t version;
};

struct Later {
  bool operator()(const Event& a, const Event& b) const {
    if (a.t != b.t) return a.t > b.t;
    if (a.type != b.type) return a.type > b.type;
    return a.seq > b.seq;
  }
};

// A job between launch and the end of its current attempt.
struct Attempt {
  Job core;
  std::vector<int> gpus;
  double remaining = 0;  // solo seconds of work left
  double rate = 0;       // work per wall second
  Seconds last = 0;      // when `remaining` was last brought up to date
  std::uint64_t version = 0;  // bumped whenever the finish event is rescheduled
  std::uint64_t attempt = 0;  // which launch (stale ramp / crash events are ignored)
  MiB reserve = 0;
  bool active = false;   // making progress (launched, not crashed)
  bool ramped = false;   // memory allocated
  bool crashed_alone = false;
  bool recovery_alone = false;  // a recovery retry placed alone (may share once its peak is seen)
  std::size_t span = 0;  // its AttemptSpan in the timeline (when recording)
  // Time slots: this attempt's slot; the work left in the job's last checkpoint (none yet:
  // a launch starts from scratch); what the checkpoint being written will hold.
  SlotClock slot;
  std::optional<double> saved;
  std::optional<double> saving;
};

struct GpuRt {
  std::vector<JobId> active;  // progressing jobs
  MiB used = 0;               // true memory allocated
  ActivityHistory hist;
  std::uint64_t hist_version = 0;
  std::vector<double> slowdown;  // of each job in `active`, same order
  // SMACT window cache (tick, history version).
  long smact_tick = LONG_MIN;
  std::uint64_t smact_version = ~0ULL;
  double smact = 0;
  // "First tick after `cross_from` below the cap" cache.
  std::uint64_t cross_version = ~0ULL;
  long cross_from = 0;
  std::optional<long> cross;
  bool watched = false;
  // Memory-time integral (for the average memory utilisation).
  double mem_area = 0;
  Seconds mem_since = 0;
};

// Power of one physical GPU (all its MIG instances together): busy time and SM work done
// (power_model.h).
struct PowerRt {
  double work = 0;  // Σ solo SMACT × rate of the progressing jobs
  bool busy = false;
  double work_area = 0, busy_area = 0;
  Seconds since = 0;
};

class Engine {
 public:
  Engine(const SimConfig& cfg, std::span<const SimJobSpec> jobs)
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

  SimResult run() {
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

 private:
  // ---- queues -------------------------------------------------------------------------------
  size_t queued() const { return (recq_.size() - rec_head_) + (mainq_.size() - main_head_); }

  void submit(size_t i) {
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

  // A job joined a queue: jobs whose slot passed while nobody waited are looked at again after
  // this instant's decision, if it still waits then (evaluate_slots).
  void enqueued() { slot_recheck_ = !slot_due_.empty(); }

  // After the decision of an instant: the slot checks that fell due, and those waiting for
  // someone to wait. Judged now, a job that the decision just placed does not count as waiting.
  void evaluate_slots() {
    if (slot_recheck_ && queued() > 0) {
      slot_eval_.insert(slot_eval_.end(), slot_due_.begin(), slot_due_.end());
      slot_due_.clear();
    }
    slot_recheck_ = false;
    std::vector<std::pair<JobId, std::uint64_t>> now_due;
    now_due.swap(slot_eval_);
    for (const auto& [j, attempt] : now_due) slot_decide(j, attempt);
  }

  static Job take_from(std::vector<Job>& q, size_t& head, JobId id, bool& found) {
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

  Job take(JobId id) {
    bool found = false;
    Job j = take_from(recq_, rec_head_, id, found);
    if (!found) j = take_from(mainq_, main_head_, id, found);
    if (!found) throw std::logic_error(fmt::format("simulate: scheduler returned job {} that is not queued", id));
    return j;
  }

  static void compact(std::vector<Job>& q, size_t& head) {
    if (head > 1024 && head * 2 > q.size()) {
      q.erase(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(head));
      head = 0;
    }
  }

  // ---- decisions ----------------------------------------------------------------------------
  double smact_of(int g, long tick) {
    GpuRt& r = gpus_[static_cast<size_t>(g)];
    if (r.smact_tick != tick || r.smact_version != r.hist_version) {
      r.smact = r.hist.window_average(tick, cfg_.smact_window_s);
      r.smact_tick = tick;
      r.smact_version = r.hist_version;
    }
    return r.smact;
  }

  void decide() {
    const long tick = static_cast<long>(std::floor(now_));
    for (int g = 0; g < slots_; ++g) snaps_[static_cast<size_t>(g)].smact = smact_of(g, tick);
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

  // After a decision that left jobs waiting: the GPUs whose SMACT window kept them out may let
  // the head in once their window falls under the cap; wake the scheduler at the first such tick.
  void watch(long tick) {
    for (int g : watched_) gpus_[static_cast<size_t>(g)].watched = false;
    watched_.clear();
    if (!smact_cap_ || cfg_.eager_decisions || queued() == 0) return;
    std::optional<long> first;
    for (int g = 0; g < slots_; ++g) {
      if (*snaps_[static_cast<size_t>(g)].smact < *smact_cap_) continue;
      gpus_[static_cast<size_t>(g)].watched = true;
      watched_.push_back(g);
      if (auto c = crossing(g, tick); c && (!first || *c < *first)) first = c;
    }
    if (first) push_wake(*first);
  }

  std::optional<long> crossing(int g, long from) {
    GpuRt& r = gpus_[static_cast<size_t>(g)];
    const bool valid = r.cross_version == r.hist_version && from >= r.cross_from && (!r.cross || from < *r.cross);
    if (!valid) {
      r.cross = r.hist.first_tick_below(from, *smact_cap_, cfg_.smact_window_s);
      r.cross_from = from;
      r.cross_version = r.hist_version;
    }
    return r.cross;
  }

  void push_wake(long tick) {
    if (pending_wakes_.insert(tick).second) heap_.push({static_cast<Seconds>(tick), Ev::Wake, seq_++, 0, 0});
  }

  void on_wake(long tick) {
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

  // A waiting job that nothing will ever let in (e.g. the policy's minimum free memory exceeds
  // the GPU) would otherwise wait forever: fail what is queued once the server is idle and
  // every SMACT window has drained.
  void check_deadlock() {
    if (residents_ > 0 || next_submit_ < jobs_.size()) return;
    const long tick = static_cast<long>(std::floor(now_));
    for (int g = 0; g < slots_; ++g)
      if (smact_of(g, tick) > 0) return;
    fail_queued("the policy never admitted it on an idle server");
  }

  void fail_queued(const std::string& why) {
    for (auto* q : {&recq_, &mainq_}) {
      const size_t head = q == &recq_ ? rec_head_ : main_head_;
      for (size_t k = head; k < q->size(); ++k) fail((*q)[k].id, why);
      q->clear();
    }
    rec_head_ = main_head_ = 0;
  }

  // ---- running jobs -------------------------------------------------------------------------
  void launch(const Placement& p, Job job) {
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
      max_jobs_per_gpu_ = std::max(max_jobs_per_gpu_, static_cast<int>(running.size()));
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

  void settle(JobId j) {
    Attempt& a = runs_[j];
    a.remaining = std::max(0.0, a.remaining - (now_ - a.last) * a.rate);
    a.last = now_;
  }

  void settle_on(const std::vector<int>& gs) {
    for (int g : gs)
      for (JobId j : gpus_[static_cast<size_t>(g)].active) settle(j);
  }

  // Recomputes the sharing outcome of GPUs whose co-runners changed, and the progress rate and
  // completion time of every job on them. Callers settle progress first.
  void reshare(const std::vector<int>& gs) {
    for (int g : gs) {
      GpuRt& r = gpus_[static_cast<size_t>(g)];
      solo_buf_.clear();
      for (JobId j : r.active) solo_buf_.push_back(jobs_[j].smact);
      r.slowdown.resize(r.active.size());
      double activity = 0;
      if (cfg_.mig.empty()) {
        activity = model_->share_into(solo_buf_, {}, r.slowdown);
      } else if (!r.active.empty()) {  // one job alone on its instance; SMACT relative to it
        const MigProfile& m = cfg_.mig[static_cast<size_t>(g % per_)];
        r.slowdown[0] = mig_slowdown(m, solo_buf_[0]);
        activity = std::min(1.0, solo_buf_[0] / m.capacity);
      }
      if (activity != r.hist.level()) {
        r.hist.set(now_, activity);
        r.hist.forget_before(static_cast<long>(std::floor(now_)), cfg_.smact_window_s);
        ++r.hist_version;
        if (r.watched && queued() > 0) {
          // Its window now moves differently: when does it fall under the cap?
          if (auto c = crossing(g, static_cast<long>(std::floor(now_)))) push_wake(*c);
        }
      }
    }
    power_buf_.assign(gs.begin(), gs.end());
    for (int g : gs) {
      const GpuRt& r = gpus_[static_cast<size_t>(g)];
      for (size_t k = 0; k < r.active.size(); ++k) {
        const JobId j = r.active[k];
        Attempt& a = runs_[j];
        double worst = std::max(1.0, r.slowdown[k]);
        for (int h : a.gpus)  // its other GPUs (a multi-GPU job runs at its slowest GPU's pace)
          if (h != g) worst = std::max(worst, slowdown_on(h, j));
        const double rate = 1.0 / worst;
        if (rate == a.rate && a.version > 0) continue;  // unchanged: its finish event stands
        a.rate = rate;
        ++a.version;
        heap_.push({now_ + a.remaining / a.rate, Ev::Finish, seq_++, j, a.version});
        if (a.gpus.size() > 1) power_buf_.insert(power_buf_.end(), a.gpus.begin(), a.gpus.end());
      }
    }
    for (int g : power_buf_) update_power(g);
  }

  // Job j's slowdown on GPU g (it is active there).
  double slowdown_on(int g, JobId j) const {
    const GpuRt& r = gpus_[static_cast<size_t>(g)];
    for (size_t k = 0; k < r.active.size(); ++k)
      if (r.active[k] == j) return r.slowdown[k];
    return 1.0;
  }

  void update_power(int g) {
    const int phys = g / per_;
    PowerRt& p = power_[static_cast<size_t>(phys)];
    p.work_area += p.work * (now_ - p.since);
    p.busy_area += (p.busy ? 1.0 : 0.0) * (now_ - p.since);
    p.since = now_;
    p.work = 0;
    p.busy = false;
    for (int k = phys * per_; k < (phys + 1) * per_; ++k)
      for (JobId j : gpus_[static_cast<size_t>(k)].active) {
        p.work += jobs_[j].smact * runs_[j].rate;
        p.busy = true;
      }
    p.work = std::min(1.0, p.work);
  }

  void set_used(int g, MiB used) {
    GpuRt& r = gpus_[static_cast<size_t>(g)];
    r.mem_area += static_cast<double>(r.used) * (now_ - r.mem_since);
    r.mem_since = now_;
    r.used = used;
    snaps_[static_cast<size_t>(g)].used_mib = used;
  }

  void detach(JobId j, const std::vector<int>& gs, bool from_running_list) {
    for (int g : gs) {
      auto& act = gpus_[static_cast<size_t>(g)].active;
      act.erase(std::remove(act.begin(), act.end(), j), act.end());
      if (from_running_list) {
        auto& run = snaps_[static_cast<size_t>(g)].running;
        run.erase(std::remove(run.begin(), run.end(), j), run.end());
      }
    }
  }

  void handle(const Event& e) {
    switch (e.type) {
      case Ev::Ramp: on_ramp(e.job, e.version); break;
      case Ev::Finish: on_finish(e.job, e.version); break;
      case Ev::OomNoticed: on_oom_noticed(e.job, e.version); break;
      case Ev::CheckpointExit: on_checkpoint_exit(e.job, e.version); break;
      case Ev::SlotCheck: on_slot_check(e.job, e.version); break;
      case Ev::Wake: on_wake(static_cast<long>(e.t)); break;
    }
  }

  void on_ramp(JobId j, std::uint64_t attempt) {
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

  void on_finish(JobId j, std::uint64_t version) {
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

  void on_oom_noticed(JobId j, std::uint64_t attempt) {
    Attempt& a = runs_[j];
    if (a.attempt != attempt) return;
    detach(j, a.gpus, true);
    ledger_.release(j);
    --residents_;
    transition(a.core, JobState::Oom);
    if (a.crashed_alone && jobs_[j].true_mib > largest_mib_) {
      // Alone on its GPU(s) and still out of memory, and no GPU is larger: nothing will hold it.
      transition(a.core, JobState::Failed);
      fail(j, fmt::format("needs {} MiB, more than a whole GPU", jobs_[j].true_mib));
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

  // ---- time slots (core/time_slots.h) --------------------------------------------------------
  void on_slot_check(JobId j, std::uint64_t attempt) { slot_eval_.emplace_back(j, attempt); }

  void slot_decide(JobId j, std::uint64_t attempt) {
    Attempt& a = runs_[j];
    if (!a.active || a.attempt != attempt || a.slot.notified) return;
    const bool others_wait = queued() > 0;
    if (slot_step(cfg_.slots, a.slot, now_, others_wait) != SlotStep::Notify) {
      if (!others_wait) slot_due_.emplace_back(j, attempt);  // asked once someone waits
      else heap_.push({*next_slot_step(cfg_.slots, a.slot), Ev::SlotCheck, seq_++, j, a.attempt});
      return;
    }
    settle(j);
    if (a.saved && a.remaining > *a.saved - kMinSlotProgress * cfg_.slots.slot_s) {
      // Its slot brought (almost) no net progress (reading the checkpoint back ate it):
      // stopping it now could repeat forever, so it gets another slot first.
      a.slot = SlotClock{now_, std::nullopt};
      heap_.push({*next_slot_step(cfg_.slots, a.slot), Ev::SlotCheck, seq_++, j, a.attempt});
      return;
    }
    // Asked to checkpoint: it writes what it has now and leaves, unless its slot's end (the
    // stop) comes first, when it leaves with only its previous checkpoint.
    a.slot.notified = now_;
    const Seconds written = now_ + cfg_.checkpoint.save_s;
    const Seconds stop = *next_slot_step(cfg_.slots, a.slot);
    a.saving = written <= stop ? std::optional<double>(a.remaining) : a.saved;
    // Stopped before its checkpoint is written, it would lose every later slot the same way:
    // it runs to its end from its next launch on (colod does the same with a job it had to stop).
    if (written > stop) a.core.checkpoint = false;
    heap_.push({std::min(written, stop), Ev::CheckpointExit, seq_++, j, a.attempt});
  }

  void on_checkpoint_exit(JobId j, std::uint64_t attempt) {
    Attempt& a = runs_[j];
    if (!a.active || a.attempt != attempt) return;  // it finished or crashed first
    settle_on(a.gpus);
    a.active = false;
    ++a.version;  // its pending finish event is void
    detach(j, a.gpus, true);
    if (a.ramped)
      for (int g : a.gpus) set_used(g, gpus_[static_cast<size_t>(g)].used - jobs_[j].true_mib);
    ledger_.release(j);
    --residents_;
    a.saved = a.saving;
    transition(a.core, JobState::Queued);
    ++out_[j].checkpoints;
    ++checkpoints_;
    end_span(a, "checkpointed");
    reshare(a.gpus);
    queued_since_[j] = now_;
    mainq_.push_back(std::move(a.core));  // at the back: everyone waiting goes first
    enqueued();
    dirty_ = true;
  }

  void fail(JobId j, std::string reason) {
    JobOutcome& o = out_[j];
    o.failed = true;
    o.fail_reason = std::move(reason);
    o.finish_s = now_;
    ++finished_;
  }

  // ---- timeline (colo sim --report) ----------------------------------------------------------
  void end_span(const Attempt& a, const char* state) {
    if (!cfg_.timeline || a.span >= cfg_.timeline->attempts.size()) return;
    AttemptSpan& sp = cfg_.timeline->attempts[a.span];
    sp.end = now_;
    sp.state = state;
  }

  // One point per batch of events, only when something shown changed.
  void record_point() {
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

  // ---- results ------------------------------------------------------------------------------
  SimResult result() {
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
    r.jain_index = rate_sq > 0 ? rate_sum * rate_sum / (static_cast<double>(r.completed) * rate_sq) : 1.0;
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
    r.lower_bound_s = lower_bound(jobs_, cfg_.gpus, cfg_.gpu_memory_mib, cfg_.ramp_s).value() - start;
    r.outcomes = std::move(out_);
    return r;
  }

  const SimConfig& cfg_;
  std::span<const SimJobSpec> jobs_;
  Scheduler sched_;
  SchedulerState sstate_;
  Ledger ledger_;
  std::unique_ptr<SharingModel> model_;
  std::optional<double> smact_cap_;  // set when the policy filters on SMACT

  int per_ = 1;    // MIG instances per GPU (1: whole GPUs)
  int slots_ = 0;  // what the core sees as GPUs: GPUs × per_
  MiB largest_mib_ = 0;
  double total_mib_ = 0;
  std::vector<GpuRt> gpus_;
  std::vector<PowerRt> power_;
  std::vector<GpuSnapshot> snaps_;
  std::vector<MiB> used_view_;
  std::vector<double> solo_buf_;
  std::vector<int> power_buf_;
  std::vector<Attempt> runs_;
  std::vector<JobOutcome> out_;
  std::vector<Seconds> queued_since_;  // when each waiting job (last) entered a queue
  std::vector<std::pair<JobId, std::uint64_t>> slot_due_;   // notice passed while nobody waited
  std::vector<std::pair<JobId, std::uint64_t>> slot_eval_;  // slot checks to judge after the decision
  bool slot_recheck_ = false;                                // someone joined a queue this instant
  std::vector<Job> recq_, mainq_;
  size_t rec_head_ = 0, main_head_ = 0;
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::set<long> pending_wakes_;
  std::vector<int> watched_;

  Seconds now_ = 0;
  size_t next_submit_ = 0;
  std::uint64_t seq_ = 0;
  bool dirty_ = false;
  size_t residents_ = 0, finished_ = 0, decisions_ = 0, events_ = 0;
  int oom_crashes_ = 0, max_jobs_per_gpu_ = 0, checkpoints_ = 0;
};

}  // namespace

SimResult simulate(const SimConfig& cfg, std::span<const SimJobSpec> jobs) {
  Engine engine(cfg, jobs);
  return engine.run();
}

}  // namespace colo::sim
