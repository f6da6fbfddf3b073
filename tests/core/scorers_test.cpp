#include <gtest/gtest.h>

#include "core/policy/scorers.h"
#include "test_support.h"

namespace colo {
namespace {

struct Fixture {
  std::vector<GpuSnapshot> gpus{test::gpu(0, 40960, 0, 0.5), test::gpu(1, 40960, 0, 0.1),
                                test::gpu(2, 40960, 0, 0.1), test::gpu(3, 40960, 0, std::nullopt)};
  std::vector<MiB> avail{30000, 10000, 20000, 35000};
  Candidate at(int i) const {
    Candidate c;
    c.gpu = &gpus[static_cast<size_t>(i)];
    c.position = i;
    c.available_mib = avail[static_cast<size_t>(i)];
    return c;
  }
  int best(const ScorerPtr& s, int rr_next = 0) const {
    Job j = test::job(1, 1000);
    PlacementRequest r{&j, 1000, false, false};
    ScoreContext ctx{4, rr_next};
    int best_i = 0;
    for (int i = 1; i < 4; ++i)
      if (s->score(at(i), r, ctx) > s->score(at(best_i), r, ctx)) best_i = i;
    return best_i;
  }
};

TEST(Scorers, FirstPrefersLowestPosition) { EXPECT_EQ(Fixture{}.best(first()), 0); }
TEST(Scorers, MostFreeMemIsWorstFit) { EXPECT_EQ(Fixture{}.best(most_free_mem()), 3); }
TEST(Scorers, LeastFreeMemIsBestFit) { EXPECT_EQ(Fixture{}.best(least_free_mem()), 1); }
TEST(Scorers, LeastSmactBreaksTiesByFreeMemoryAndTreatsUnknownAsBusy) {
  EXPECT_EQ(Fixture{}.best(least_smact()), 2);  // 1 and 2 tie on 0.1; 2 has more free memory
}
TEST(Scorers, RoundRobinStartsAtTheCursorAndWraps) {
  Fixture f;
  EXPECT_EQ(f.best(round_robin(), 0), 0);
  EXPECT_EQ(f.best(round_robin(), 2), 2);
  EXPECT_EQ(f.best(round_robin(), 3), 3);
  EXPECT_EQ(f.best(round_robin(), 4), 0);  // cursor past the end wraps
}

}  // namespace
}  // namespace colo
