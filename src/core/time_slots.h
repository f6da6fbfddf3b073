#pragma once
// Fairness by time slots (thesis §7.3): a job that can checkpoint runs for one slot at a time.
// `notice_s` before its slot ends, if others wait, it is asked to checkpoint (a signal and a
// file, docs/DAEMON.md "Time slots"); when the slot is over (and at least `notice_s` after the
// request) it is stopped and queued again at the back, resuming from its checkpoint on the next
// free share. Nobody waiting: the job keeps its GPU (stopping it would only cost the
// checkpoint). Pure rules; the daemon and the simulator apply them.
#include <optional>
#include <string>

#include "core/units.h"

namespace colo {

struct TimeSlots {
  TimeSlots() = default;
  TimeSlots(Seconds slot, Seconds notice, Seconds min_run = 0) : slot_s(slot), notice_s(notice), min_run_s(min_run) {}
  Seconds slot_s = 0;    // length of one slot; 0 = off (jobs run to their end)
  Seconds notice_s = 0;  // checkpoint request this long before the slot ends (< slot_s)
  // Never asked in the first min_run_s of an attempt: a job must get to install its request
  // handler (a Python job dies of an unhandled SIGUSR1 during its imports).
  Seconds min_run_s = 0;
  bool enabled() const { return slot_s > 0; }
};

// One running job's slot: when its current attempt started, and when (if) it was asked to
// checkpoint.
struct SlotClock {
  Seconds started = 0;
  std::optional<Seconds> notified;
};

enum class SlotStep { Keep, Notify, Stop };

// What to do with a checkpointing job now. `others_wait`: some job is queued.
SlotStep slot_step(const TimeSlots& slots, const SlotClock& clock, Seconds now, bool others_wait);

// When slot_step's answer can next change while others wait (the notice, then the stop);
// nullopt when slots are off.
std::optional<Seconds> next_slot_step(const TimeSlots& slots, const SlotClock& clock);

// Checks a configuration; returns an error message, or empty when it is usable.
std::string time_slots_problem(const TimeSlots& slots);

}  // namespace colo
