#include "sim/engine/engine.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

// Fairness time slots: a job asked to checkpoint before its slot ends leaves and queues again.

namespace colo::sim::detail {

namespace {
// Share of a slot (in solo seconds of work) that the slot must add to a job's checkpoint before
// the job is stopped for another. Any positive bound makes every job finish; a tenth keeps a job
// slowed down by many co-runners from spending most of its slots reading its checkpoint back
// (assumption).
constexpr double kMinSlotProgress = 0.1;
}  // namespace

void Engine::evaluate_slots() {
  if (slot_recheck_ && queued() > 0) {
    slot_eval_.insert(slot_eval_.end(), slot_due_.begin(), slot_due_.end());
    slot_due_.clear();
  }
  slot_recheck_ = false;
  std::vector<std::pair<JobId, std::uint64_t>> now_due;
  now_due.swap(slot_eval_);
  for (const auto& [j, attempt] : now_due) slot_decide(j, attempt);
}

void Engine::slot_decide(JobId j, std::uint64_t attempt) {
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
  a.writing = a.remaining;
  a.checkpointed_before = a.core.checkpoint;
  // Stopped before its checkpoint is written, it would lose every later slot the same way:
  // it runs to its end from its next launch on (colod does the same with a job it had to stop).
  if (written > stop) a.core.checkpoint = false;
  heap_.push({std::min(written, stop), Ev::CheckpointExit, seq_++, j, a.attempt});
}

void Engine::on_checkpoint_exit(JobId j, std::uint64_t attempt) {
  Attempt& a = runs_[j];
  if (!a.active || a.attempt != attempt) return;  // it finished or crashed first
  const Seconds written = *a.slot.notified + cfg_.checkpoint.save_s;
  if (now_ < written && queued() == 0) {
    // The slot ends before the checkpoint is written, but nobody waits any more: colod stops a
    // job at its slot's end only for someone waiting (core slot_step, daemon enforce_slots), so
    // it goes on and leaves once its checkpoint is written, as asked.
    a.saving = a.writing;
    a.core.checkpoint = a.checkpointed_before;
    heap_.push({written, Ev::CheckpointExit, seq_++, j, a.attempt});
    return;
  }
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
  if (++checkpoints_ > cfg_.max_checkpoints)
    throw UserError(fmt::format("time slots of {:g} s: more than {} checkpoints by {:.3g} s of simulated time (jobs far "
                                "longer than their slots); give longer slots",
                                cfg_.slots.slot_s, cfg_.max_checkpoints, now_));
  end_span(a, "checkpointed");
  reshare(a.gpus);
  queued_since_[j] = now_;
  mainq_.push_back(std::move(a.core));  // at the back: everyone waiting goes first
  enqueued();
  dirty_ = true;
}

}  // namespace colo::sim::detail
