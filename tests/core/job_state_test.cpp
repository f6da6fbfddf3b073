#include <gtest/gtest.h>

#include <stdexcept>

#include "core/job.h"

namespace colo {
namespace {

TEST(JobState, NamesRoundTrip) {
  for (int i = 0; i <= static_cast<int>(JobState::Estimating); ++i) {
    const auto s = static_cast<JobState>(i);
    EXPECT_EQ(job_state_from_string(to_string(s)), s);
  }
  EXPECT_FALSE(job_state_from_string("runing").has_value());
}

TEST(JobState, HappyPathCountsOneAttempt) {
  Job j;
  transition(j, JobState::Placed);
  transition(j, JobState::Running);
  EXPECT_EQ(j.attempts, 1);
  transition(j, JobState::Done);
  EXPECT_TRUE(is_terminal(j.state));
}

TEST(JobState, OomGoesThroughRecoveryAndRunsAgain) {
  Job j;
  transition(j, JobState::Placed);
  transition(j, JobState::Running);
  transition(j, JobState::Oom);
  transition(j, JobState::Recovering);
  transition(j, JobState::Placed);
  transition(j, JobState::Running);
  EXPECT_EQ(j.attempts, 2);
}

TEST(JobState, IllegalEdgesThrow) {
  Job j;
  EXPECT_THROW(transition(j, JobState::Running), std::logic_error);  // must be placed first
  EXPECT_THROW(transition(j, JobState::Done), std::logic_error);
  transition(j, JobState::Cancelled);
  EXPECT_THROW(transition(j, JobState::Queued), std::logic_error);
  EXPECT_THROW(transition(j, JobState::Cancelled), std::logic_error);  // already terminal
  EXPECT_FALSE(can_transition(JobState::Done, JobState::Running));
  EXPECT_FALSE(can_transition(JobState::Queued, JobState::Oom));
}

TEST(JobState, RejectedJobsFailStraightFromTheQueues) {
  Job q;
  transition(q, JobState::Failed);
  EXPECT_TRUE(is_terminal(q.state));
  EXPECT_TRUE(can_transition(JobState::Recovering, JobState::Failed));
  EXPECT_EQ(q.attempts, 0);
}

TEST(JobState, FailedLaunchReturnsToQueueWithoutAnAttempt) {
  Job j;
  transition(j, JobState::Placed);
  transition(j, JobState::Queued);
  EXPECT_EQ(j.attempts, 0);
}

}  // namespace
}  // namespace colo

namespace colo {
namespace {

// A probed job waits in estimating, then queues (the probe's answer or its fallback); it can be
// cancelled there, but never placed or run before it has a need to plan with.
TEST(JobState, EstimatingOnlyQueuesOrIsCancelled) {
  Job j;
  j.state = JobState::Estimating;
  EXPECT_FALSE(can_transition(JobState::Estimating, JobState::Placed));
  EXPECT_FALSE(can_transition(JobState::Estimating, JobState::Running));
  EXPECT_TRUE(can_transition(JobState::Estimating, JobState::Cancelled));
  transition(j, JobState::Queued);
  EXPECT_EQ(j.state, JobState::Queued);
  EXPECT_FALSE(can_transition(JobState::Queued, JobState::Estimating));
  EXPECT_EQ(job_state_from_string("estimating"), JobState::Estimating);
}

}  // namespace
}  // namespace colo

namespace colo {
namespace {

// A job whose time slot ended checkpoints and queues again; its launches keep counting.
TEST(JobState, ACheckpointedJobQueuesAgain) {
  Job j;
  transition(j, JobState::Placed);
  transition(j, JobState::Running);
  transition(j, JobState::Queued);
  EXPECT_EQ(j.attempts, 1);
  transition(j, JobState::Placed);
  transition(j, JobState::Running);
  EXPECT_EQ(j.attempts, 2);
  EXPECT_FALSE(can_transition(JobState::Done, JobState::Queued));
}

}  // namespace
}  // namespace colo
