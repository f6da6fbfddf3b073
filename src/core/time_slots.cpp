#include "core/time_slots.h"

#include <algorithm>
#include <cmath>

namespace colo {

namespace {
// The stop is due at the slot's end, but never sooner than notice_s after the request: a job
// asked late (nobody waited at its notice time) still gets its full notice.
Seconds stop_time(const TimeSlots& s, const SlotClock& c) {
  return std::max(c.started + s.slot_s, *c.notified + s.notice_s);
}
}  // namespace

SlotStep slot_step(const TimeSlots& slots, const SlotClock& clock, Seconds now, bool others_wait) {
  if (!slots.enabled() || !others_wait) return SlotStep::Keep;
  if (!clock.notified) return now >= clock.started + slots.slot_s - slots.notice_s ? SlotStep::Notify : SlotStep::Keep;
  return now >= stop_time(slots, clock) ? SlotStep::Stop : SlotStep::Keep;
}

std::optional<Seconds> next_slot_step(const TimeSlots& slots, const SlotClock& clock) {
  if (!slots.enabled()) return std::nullopt;
  if (!clock.notified) return clock.started + slots.slot_s - slots.notice_s;
  return stop_time(slots, clock);
}

std::string time_slots_problem(const TimeSlots& s) {
  if (!std::isfinite(s.slot_s) || s.slot_s < 0) return "the slot length must be a finite number of seconds ≥ 0";
  if (!std::isfinite(s.notice_s) || s.notice_s < 0) return "the checkpoint notice must be a finite number of seconds ≥ 0";
  if (s.enabled() && s.notice_s >= s.slot_s) return "the checkpoint notice must be shorter than the slot";
  return "";
}

}  // namespace colo
