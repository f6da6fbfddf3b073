#pragma once
// The discrete-event simulator: N identical GPUs (or their MIG instances, SimConfig::mig) driven
// by the scheduler core (core/scheduler.h), the same code the daemon runs. Ground truth per job: true peak memory, solo duration, solo SM
// activity. What happens (docs/SIMULATOR.md has the full model):
//  * A placed job starts at once and makes progress at 1/slowdown, its slowdown coming from the
//    sharing model (MPS or streams) of each of its GPUs (a multi-GPU job runs at its slowest
//    GPU's pace). Progress rates are recomputed whenever a co-runner starts or stops.
//  * Its memory appears `ramp_s` after launch (the monitor sees the GPU as free until then; the
//    ledger holds the estimate). If its true memory does not fit then, it crashes with OOM; the
//    crash is noticed `oom_detect_s` later, its ledger entry released, core::plan_recovery
//    applied and the job put on the recovery queue. A job that crashes alone on its GPUs can
//    never fit and is failed.
//  * A monitor samples SMACT every second; the core sees 90-sample window averages computed
//    exactly from the activity history (activity_history.h).
//  * Scheduler::decide runs after every batch of simultaneous events that could let a waiting
//    job start (submit to empty queues, finish, OOM noticed) and on the monitor tick at which a
//    GPU's SMACT window falls back under the policy's cap while jobs wait. That is the same
//    schedule as deciding on every event and every tick, because the core serves FIFO heads
//    only and nothing else in its input changes in between (`eager_decisions` does the
//    latter; tests check both agree).
//  * Power (power_model.h): idle, or a busy floor plus SM work done, integrated over the makespan.
//  * Time slots (core/time_slots.h, off by default): a job whose slot is ending while others wait
//    is asked to checkpoint; it writes the checkpoint (checkpoint.save_s, progress after the
//    request is lost), leaves its GPU and queues again at the back; the next launch resumes
//    from the checkpoint after checkpoint.restore_s. Stopped at its slot's end before the
//    checkpoint is written, it keeps only what its previous checkpoint held and is not stopped
//    again. "Others wait" is judged after the instant's decision, and recovery retries run to
//    their end (as in colod). A slot that added less than a tenth of its length to the job's checkpoint (reading
//    it back ate the rest) is followed by another before the job is asked.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/ledger.h"
#include "core/scheduler.h"
#include "core/time_slots.h"
#include "sim/models/checkpoint_model.h"
#include "sim/models/mig_model.h"
#include "sim/models/mps_model.h"
#include "sim/models/power_model.h"
#include "sim/models/sharing_model.h"
#include "sim/sim_job.h"
#include "sim/models/streams_model.h"
#include "sim/timeline.h"

namespace colo::sim {

// What an audit hook sees after each decision round was applied (tests check invariants here).
struct AuditView {
  Seconds now = 0;
  const Ledger* ledger = nullptr;
  std::span<const GpuSnapshot> gpus;      // running = jobs resident on the GPU
  std::span<const Placement> placements;  // made in this round
  std::span<const MiB> used_mib;          // true memory in use per GPU
};

struct SimConfig {
  int gpus = 4;
  int nodes = 1;  // servers the GPUs are split into (evenly); a job's GPUs come from one
  MiB gpu_memory_mib = 40960;
  // false: an OOM crash fails the job (plain Slurm: no one re-runs it); true: the core's
  // recovery rule (scheduler.recovery) re-queues it.
  bool recover_ooms = true;
  SchedulerConfig scheduler;
  SharingKind sharing = SharingKind::Mps;
  // MIG: when not empty, every GPU is split into these instances (one job each, slowed down by
  // mig_slowdown; `sharing` is unused); the core places jobs on instances.
  std::vector<MigProfile> mig;
  MpsParams mps;
  StreamsParams streams;
  PowerParams power;
  Seconds ramp_s = 30;        // launch → memory allocated (and OOM, if it does not fit)
  Seconds oom_detect_s = 10;  // OOM crash → noticed by the daemon
  int smact_window_s = 90;    // monitor window (1 s samples)
  TimeSlots slots;            // off unless slot_s > 0; every job checkpoints when they are on
  // Checkpoints (slot ends that stop a job) after which the run is refused as too long: slots far
  // shorter than the jobs end without bound, each a checkpoint, a requeue and a relaunch. 2 million
  // take about 5 s on the development VM (an audit's 1.2 million in 2.4 s).
  int max_checkpoints = 2'000'000;
  CheckpointParams checkpoint;
  bool eager_decisions = false;  // decide on every event and every tick while jobs wait
  // Also bound the makespan by the configuration programme (sim/bounds/packing_bound.h): a
  // linear programme per run (memoised for the same jobs and GPUs), tighter than the closed-form
  // terms where GPUs are shared. Off unless asked for (`colo sim` does): it costs more than a
  // small simulation.
  bool packing_bound = false;
  std::function<void(const AuditView&)> audit;
  // Called every `progress_every` processed events with (jobs finished or failed, jobs).
  std::function<void(std::size_t, std::size_t)> progress;
  std::size_t progress_every = 100000;
  // Optional: filled with every attempt and the per-GPU series (colo sim --report).
  SimTimeline* timeline = nullptr;
};

struct JobOutcome {
  JobId id = 0;
  std::string name;
  Seconds submit_s = 0;
  Seconds first_start_s = -1;  // first launch, −1 if never
  Seconds last_start_s = -1;
  Seconds finish_s = -1;       // completion, −1 if it never completed
  int attempts = 0;
  int oom_crashes = 0;
  int checkpoints = 0;         // times its slot ended and it resumed later
  Seconds waited_s = 0;        // all its time in the queues (first wait, after crashes, after slots)
  bool completed = false;
  bool failed = false;
  std::string fail_reason;
  std::vector<int> gpus;       // of the last attempt
};

struct SimResult {
  std::size_t jobs = 0, completed = 0, failed = 0;
  Seconds makespan_s = 0;  // last completion − first submission
  Seconds avg_wait_s = 0;  // first launch − submit
  Seconds avg_exec_s = 0;  // completion − first launch (includes crashed attempts and recovery)
  Seconds avg_jct_s = 0;   // completion − submit
  Seconds max_wait_s = 0;    // the longest first wait (first launch − submit) of a completed job
  Seconds max_queued_s = 0;  // the longest total queued time of a completed job (JobOutcome::waited_s)
  // Jain's fairness index of the completed jobs' service rates solo_s / JCT: 1 when every job
  // is slowed down alike, 1/n when one job gets everything.
  double jain_index = 0;  // NaN when no job completed
  int checkpoints = 0;     // slot ends that stopped a job
  double energy_mj = 0;
  int oom_crashes = 0;
  double smact_avg = 0;      // over GPUs and the makespan
  double mem_util_avg = 0;   // true memory in use / capacity, over GPUs and the makespan
  Seconds lower_bound_s = 0;  // no schedule of the completed jobs ends sooner (sim/bounds/)
  std::optional<double> energy_lower_bound_mj;  // nor uses less energy (none with MIG)
  int max_jobs_per_gpu = 0;  // most jobs resident on one GPU at once
  std::size_t decisions = 0; // Scheduler::decide calls
  std::size_t events = 0;
  std::string policy;        // Policy::describe()
  std::vector<JobOutcome> outcomes;  // by job id (= index in the input)
};

// Runs the jobs (ids = their index) to completion. Jobs must be sorted by submit time.
SimResult simulate(const SimConfig& cfg, std::span<const SimJobSpec> jobs);

}  // namespace colo::sim
