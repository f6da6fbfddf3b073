#include "slurm/escalation.h"

#include <gtest/gtest.h>

namespace colo::slurm {
namespace {

SiteSettings escalation_site40() {
  SiteSettings s;
  s.shard_mib = 1024;
  s.shards_per_gpu = 40;
  s.step_mib = 5 * 1024;
  return s;
}

TEST(Escalation, LooseRuleAddsOneStepToWhatTheJobHad) {
  const auto next = escalate(TresRequest{5, 0, true}, std::nullopt, escalation_site40());
  ASSERT_TRUE(next);
  EXPECT_EQ(next->shards, 10);
}

TEST(Escalation, AnObservedPeakAboveTheShareIsTheBase) {
  const auto next = escalate(TresRequest{5, 0, true}, MiB{12000}, escalation_site40());
  ASSERT_TRUE(next);
  EXPECT_EQ(next->shards, 17);  // ceil((12000 + 5120) / 1024)
}

TEST(Escalation, MoreThanOneGpuBecomesAWholeGpuThenNothing) {
  const auto next = escalate(TresRequest{38, 0, true}, std::nullopt, escalation_site40());
  ASSERT_TRUE(next);
  EXPECT_EQ(next->whole_gpus, 1);
  EXPECT_EQ(next->shards, 0);
  EXPECT_FALSE(escalate(*next, std::nullopt, escalation_site40()));
}

}  // namespace
}  // namespace colo::slurm
