#include "core/time_slots.h"

#include <cmath>

#include <gtest/gtest.h>

namespace colo {
namespace {

const TimeSlots kSlots{3600, 600};

TEST(TimeSlots, OffKeepsEveryJob) {
  const TimeSlots off{};
  EXPECT_EQ(slot_step(off, SlotClock{0, std::nullopt}, 1e9, true), SlotStep::Keep);
  EXPECT_FALSE(next_slot_step(off, SlotClock{0, std::nullopt}));
}

TEST(TimeSlots, NoticeBeforeTheSlotEndsThenStop) {
  SlotClock c{100, std::nullopt};
  EXPECT_EQ(slot_step(kSlots, c, 100 + 2999, true), SlotStep::Keep);
  EXPECT_EQ(*next_slot_step(kSlots, c), 100 + 3000);
  EXPECT_EQ(slot_step(kSlots, c, 100 + 3000, true), SlotStep::Notify);
  c.notified = 100 + 3000;
  EXPECT_EQ(slot_step(kSlots, c, 100 + 3599, true), SlotStep::Keep);
  EXPECT_EQ(*next_slot_step(kSlots, c), 100 + 3600);
  EXPECT_EQ(slot_step(kSlots, c, 100 + 3600, true), SlotStep::Stop);
}

// Nobody waits: stopping would only cost a checkpoint, so the job keeps its GPU past its slot.
TEST(TimeSlots, NobodyWaitingKeepsTheJob) {
  const SlotClock c{0, std::nullopt};
  EXPECT_EQ(slot_step(kSlots, c, 10 * 3600, false), SlotStep::Keep);
  EXPECT_EQ(slot_step(kSlots, SlotClock{0, 3000.0}, 10 * 3600, false), SlotStep::Keep);
}

// Someone arrives long after the slot ended: the job is asked now and still gets its full
// notice before it is stopped.
TEST(TimeSlots, ALateRequestStillGetsTheFullNotice) {
  SlotClock c{0, std::nullopt};
  EXPECT_EQ(slot_step(kSlots, c, 5000, true), SlotStep::Notify);
  c.notified = 5000;
  EXPECT_EQ(slot_step(kSlots, c, 5599, true), SlotStep::Keep);
  EXPECT_EQ(*next_slot_step(kSlots, c), 5600);
  EXPECT_EQ(slot_step(kSlots, c, 5600, true), SlotStep::Stop);
}

// A short slot still leaves the job its first min_run_s to install its handler.
TEST(TimeSlots, NoRequestWithinTheMinimumRun) {
  const TimeSlots s{120, 100, 60};
  const SlotClock c{0, std::nullopt};
  EXPECT_EQ(slot_step(s, c, 59, true), SlotStep::Keep);
  EXPECT_EQ(*next_slot_step(s, c), 60);
  EXPECT_EQ(slot_step(s, c, 60, true), SlotStep::Notify);
  EXPECT_EQ(*next_slot_step(s, SlotClock{0, 60.0}), 160);  // the full notice after the request
}

TEST(TimeSlots, ProblemsAreNamed) {
  EXPECT_EQ(time_slots_problem(kSlots), "");
  EXPECT_EQ(time_slots_problem(TimeSlots{}), "");
  EXPECT_NE(time_slots_problem(TimeSlots{600, 600}), "");
  EXPECT_NE(time_slots_problem(TimeSlots{-1, 0}), "");
  EXPECT_EQ(time_slots_problem(TimeSlots{1e-300, 0}), "a time slot must last at least 1 s (0 switches slots off)");
  EXPECT_EQ(time_slots_problem(TimeSlots{1, 0}), "");
  EXPECT_NE(time_slots_problem(TimeSlots{NAN, 0}), "");
  EXPECT_NE(time_slots_problem(TimeSlots{3600, INFINITY}), "");
  EXPECT_NE(time_slots_problem(TimeSlots{3600, 60, -1}), "");
}

}  // namespace
}  // namespace colo
