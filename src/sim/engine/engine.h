#pragma once
// The simulator's event engine (sim/simulator.h describes the model it runs). One class, its
// state here, its work split by concern:
//   engine.cpp     the event loop, submissions and the two queues
//   decisions.cpp  calling the scheduler core, the SMACT windows it reads, waking it up
//   attempts.cpp   a launched job's life: launch, memory ramp (or OOM), finish, crash notice
//   sharing.cpp    co-runners' slowdowns (sharing models, MIG) and each GPU's power
//   slots.cpp      fairness time slots: checkpoint requests and checkpointed exits
//   results.cpp    the timeline for reports and the metrics of SimResult
// Internal to the simulator: only simulate() (simulator.cpp) constructs it.

#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/activity_history.h"
#include "sim/simulator.h"

namespace colo::sim::detail {

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
  // Asked to checkpoint with the slot's end before the checkpoint is written: what it would
  // write, and whether it checkpointed before (the stop is skipped when nobody waits then).
  std::optional<double> writing;
  bool checkpointed_before = false;
};

// What the engine keeps per GPU (per MIG instance with a MIG layout).
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
  // Memory-time integral (for the average memory utilisation).
  double mem_area = 0;
  Seconds mem_since = 0;
};

// What every decision reads of every GPU, kept apart from GpuRt: a pass over 2 000 GPUs' GpuRt
// (histories, job lists) spreads over far more cache than these few bytes each.
struct WindowRt {
  // From this tick on the GPU's SMACT window average is `level`: its history has been steady for
  // a whole window (ActivityHistory::window_average's own shortcut, without reading the history).
  long steady_from = LONG_MIN;
  double level = 0;
  bool watched = false;  // watch() keeps an eye on it (its window was at or above the cap)
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
  Engine(const SimConfig& cfg, std::span<const SimJobSpec> jobs);
  SimResult run();

 private:
  // ---- engine.cpp: event loop and queues ---------------------------------------------------
  size_t queued() const { return (recq_.size() - rec_head_) + (mainq_.size() - main_head_); }
  void submit(size_t i);
  // A job joined a queue: jobs whose slot passed while nobody waited are looked at again after
  // this instant's decision, if it still waits then (evaluate_slots).
  void enqueued() { slot_recheck_ = !slot_due_.empty(); }
  static Job take_from(std::vector<Job>& q, size_t& head, JobId id, bool& found);
  Job take(JobId id);
  static void compact(std::vector<Job>& q, size_t& head);
  void handle(const Event& e);
  void fail(JobId j, std::string reason);

  // ---- decisions.cpp -----------------------------------------------------------------------
  double smact_of(int g, long tick);
  void decide();
  // After a decision that left jobs waiting: the GPUs whose SMACT window kept them out may let
  // the head in once their window falls under the cap; wake the scheduler at the first such tick.
  void watch(long tick);
  std::optional<long> crossing(int g, long from);
  void push_wake(long tick);
  void on_wake(long tick);
  // A waiting job that nothing will ever let in (e.g. the policy's minimum free memory exceeds
  // the GPU) would otherwise wait forever: fail what is queued once the server is idle and
  // every SMACT window has drained.
  void check_deadlock();
  void fail_queued(const std::string& why);

  // ---- attempts.cpp: running jobs ----------------------------------------------------------
  void launch(const Placement& p, Job job);
  void settle(JobId j);  // brings `remaining` up to now
  void settle_on(const std::vector<int>& gs);
  void detach(JobId j, const std::vector<int>& gs, bool from_running_list);
  void set_used(int g, MiB used);
  void on_ramp(JobId j, std::uint64_t attempt);
  void on_finish(JobId j, std::uint64_t version);
  void on_oom_noticed(JobId j, std::uint64_t attempt);

  // ---- sharing.cpp -------------------------------------------------------------------------
  // Recomputes the sharing outcome of GPUs whose co-runners changed, and the progress rate and
  // completion time of every job on them. Callers settle progress first.
  void reshare(const std::vector<int>& gs);
  // Job j's slowdown on GPU g (it is active there).
  double slowdown_on(int g, JobId j) const;
  void update_power(int g);

  // ---- slots.cpp: time slots (core/time_slots.h) -------------------------------------------
  void on_slot_check(JobId j, std::uint64_t attempt) { slot_eval_.emplace_back(j, attempt); }
  // After the decision of an instant: the slot checks that fell due, and those waiting for
  // someone to wait. Judged now, a job that the decision just placed does not count as waiting.
  void evaluate_slots();
  void slot_decide(JobId j, std::uint64_t attempt);
  void on_checkpoint_exit(JobId j, std::uint64_t attempt);

  // ---- results.cpp: timeline (colo sim --report) and metrics -------------------------------
  void end_span(const Attempt& a, const char* state);
  // One point per batch of events, only when something shown changed.
  void record_point();
  SimResult result();

  const SimConfig& cfg_;
  std::span<const SimJobSpec> jobs_;
  Scheduler sched_;
  SchedulerState sstate_;
  Ledger ledger_;
  std::unique_ptr<SharingModel> model_;
  std::optional<double> smact_cap_;  // set when the policy filters on SMACT

  int per_ = 1;    // MIG instances per GPU (1: whole GPUs)
  int slots_ = 0;  // what the core sees as GPUs: GPUs × per_
  int holders_on_one_node(MiB mib) const;  // most GPUs (instances) of one server with total ≥ mib
  MiB largest_mib_ = 0;
  double total_mib_ = 0;
  std::vector<GpuRt> gpus_;
  std::vector<WindowRt> window_;  // per GPU, as gpus_
  std::vector<PowerRt> power_;
  std::vector<GpuSnapshot> snaps_;
  std::vector<MiB> used_view_;
  std::vector<double> solo_buf_, busy_buf_;
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

}  // namespace colo::sim::detail
