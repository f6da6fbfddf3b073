// The progress line's text and ETA (what is drawn, not when: drawing is only to a terminal).
#include <gtest/gtest.h>

#include "cli/progress.h"

namespace colo::cli {
namespace {

TEST(Progress, LineShowsCountPercentElapsedAndEta) {
  EXPECT_EQ(Progress::line("colo sim", 250, 1000, 30), "colo sim: 250/1000 (25%), 0:30 elapsed, ETA 1:30");
  EXPECT_EQ(Progress::line("x", 0, 10, 5), "x: 0/10 (0%), 0:05 elapsed, ETA ?");
  EXPECT_EQ(Progress::line("x", 10, 10, 3725), "x: 10/10 (100%), 1:02:05 elapsed, ETA 0:00");
  EXPECT_EQ(Progress::line("x", 12, 10, 1), "x: 10/10 (100%), 0:01 elapsed, ETA 0:00");  // clamped
}

TEST(Progress, QuietWhenJsonOrNotATerminal) {
  Progress json("x", 10, true);
  EXPECT_FALSE(json.enabled());
  Progress empty("x", 0, false);
  EXPECT_FALSE(empty.enabled());
}

TEST(Progress, DurationFormat) {
  EXPECT_EQ(Progress::format_duration(59.4), "0:59");
  EXPECT_EQ(Progress::format_duration(3600), "1:00:00");
  EXPECT_EQ(Progress::format_duration(-1), "?");
}

}  // namespace
}  // namespace colo::cli
