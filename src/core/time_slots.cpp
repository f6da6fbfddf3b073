#include "core/time_slots.h"

#include <algorithm>
#include <cmath>

namespace colo {

namespace {
// The request is due notice_s before the slot ends, but not within the attempt's first min_run_s.
Seconds notice_time(const TimeSlots& s, const SlotClock& c) {
  return c.started + std::max(s.slot_s - s.notice_s, s.min_run_s);
}

// The stop is due at the slot's end, but never sooner than notice_s after the request: a job
// asked late (nobody waited at its notice time) still gets its full notice.
Seconds stop_time(const TimeSlots& s, const SlotClock& c) {
  return std::max(c.started + s.slot_s, *c.notified + s.notice_s);
}
}  // namespace

SlotStep slot_step(const TimeSlots& slots, const SlotClock& clock, Seconds now, bool others_wait) {
  if (!slots.enabled() || !others_wait) return SlotStep::Keep;
  if (!clock.notified) return now >= notice_time(slots, clock) ? SlotStep::Notify : SlotStep::Keep;
  return now >= stop_time(slots, clock) ? SlotStep::Stop : SlotStep::Keep;
}

std::optional<Seconds> next_slot_step(const TimeSlots& slots, const SlotClock& clock) {
  if (!slots.enabled()) return std::nullopt;
  if (!clock.notified) return notice_time(slots, clock);
  return stop_time(slots, clock);
}

std::string time_slots_problem(const TimeSlots& s) {
  if (!std::isfinite(s.slot_s) || s.slot_s < 0) return "the slot length must be a finite number of seconds ≥ 0";
  if (!std::isfinite(s.notice_s) || s.notice_s < 0) return "the checkpoint notice must be a finite number of seconds ≥ 0";
  if (!std::isfinite(s.min_run_s) || s.min_run_s < 0) return "the minimum run before a request must be finite and ≥ 0";
  // Below a second a slot cannot hold a checkpoint request and its answer (1e-300 s read as "on").
  if (s.enabled() && s.slot_s < 1) return "a time slot must last at least 1 s (0 switches slots off)";
  if (s.enabled() && s.notice_s >= s.slot_s) return "the checkpoint notice must be shorter than the slot";
  return "";
}

}  // namespace colo
