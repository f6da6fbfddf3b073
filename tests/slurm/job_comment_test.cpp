#include "slurm/job_comment.h"

#include <gtest/gtest.h>

#include <string>

namespace colo::slurm {
namespace {

TEST(JobComment, RoundTripsWithTheUsersCommentAfterIt) {
  const JobComment c{12288, "allocsim", "u1000-abcdef"};
  const std::string s = format_comment(c, "my run #3");
  EXPECT_EQ(s, "colo:mem_mib=12288,est=allocsim,fp=u1000-abcdef my run #3");
  const auto back = parse_comment(s);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->mem_mib, 12288);
  EXPECT_EQ(back->estimator, "allocsim");
  EXPECT_EQ(back->fingerprint, "u1000-abcdef");
}

TEST(JobComment, MemoryIsOptional) {
  const std::string s = format_comment(JobComment{0, "none", "u5-1"});
  EXPECT_EQ(s, "colo:est=none,fp=u5-1");
  const auto back = parse_comment(s);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->mem_mib, 0);
}

TEST(JobComment, ValuesCannotBreakTheRecord) {
  const std::string s = format_comment(JobComment{1, "a b,c=d", "x"});
  EXPECT_EQ(s, "colo:mem_mib=1,est=a_b_c_d,fp=x");
}

TEST(JobComment, IgnoresCommentsWithoutAValidRecord) {
  EXPECT_FALSE(parse_comment(""));
  EXPECT_FALSE(parse_comment("just a note"));
  EXPECT_FALSE(parse_comment("xcolo:mem_mib=5"));              // not at a word start
  EXPECT_FALSE(parse_comment("colo:mem_mib=-5"));              // out of range
  EXPECT_FALSE(parse_comment("colo:mem_mib=99999999999999"));  // more than any GPU
  EXPECT_FALSE(parse_comment("colo:garbage"));
  // Only what colo writes: a fingerprint u<uid>-<hex> and a short estimator name, so a user's
  // comment cannot put unbounded or control text into the recovery agent's state and log.
  EXPECT_FALSE(parse_comment("colo:fp=u0-" + std::string(70000, 'a')));
  EXPECT_FALSE(parse_comment("colo:fp=u1000-abc\nforged log line"));
  EXPECT_FALSE(parse_comment("colo:fp=x"));
  EXPECT_FALSE(parse_comment("colo:mem_mib=5,est=" + std::string(41, 'a')));
  EXPECT_TRUE(parse_comment("colo:mem_mib=5,est=auto(trace),fp=u4294967295-0123456789abcdef"));
  const auto later = parse_comment("note colo:mem_mib=2048");
  ASSERT_TRUE(later);
  EXPECT_EQ(later->mem_mib, 2048);
}

}  // namespace
}  // namespace colo::slurm
