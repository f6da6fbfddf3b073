#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "slurm/slurm_control.h"

namespace colo::slurm {
namespace {

using ::testing::HasSubstr;

// The fields colo reads, as Slurm 22.05.8's `squeue --json` writes them (a held job after
// RequeueExitHold=75: the raw wait status 75 << 8).
constexpr const char* k2205 = R"({"meta":{"plugin":{"type":"openapi/v0.0.38"}},"errors":[],"jobs":[
 {"job_id":7,"user_id":65534,"job_state":"SPECIAL_EXIT","state_reason":"JobHeldUser","restart_cnt":1,
  "exit_code":19200,"tres_per_node":"gres:shard:5","comment":"colo:mem_mib=4096,est=user,fp=u65534-1"},
 {"job_id":8,"user_id":0,"job_state":"RUNNING","state_reason":"None","restart_cnt":0,"exit_code":0,
  "tres_per_node":null,"comment":null}]})";

// Newer releases: exit codes as objects, numbers as {"set","number"}, states as lists.
constexpr const char* kNewer = R"({"jobs":[{"job_id":{"set":true,"number":9},"user_id":1000,
  "job_state":["SPECIAL_EXIT"],"state_reason":"JobHeldUser","restart_cnt":{"set":true,"number":2},
  "exit_code":{"status":["EXITED"],"return_code":{"set":true,"number":75}},"tres_per_node":"gres/shard:10",
  "comment":""}]})";

TEST(SqueueJson, ReadsSlurm2205) {
  const auto jobs = parse_squeue_json(k2205);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].job_id, 7u);
  EXPECT_EQ(jobs[0].user_id, 65534);
  EXPECT_EQ(jobs[0].state, "SPECIAL_EXIT");
  EXPECT_EQ(jobs[0].exit_code, 75);
  EXPECT_EQ(jobs[0].restart_cnt, 1);
  EXPECT_EQ(jobs[0].tres_per_node, "gres:shard:5");
  EXPECT_THAT(jobs[0].comment, HasSubstr("mem_mib=4096"));
  EXPECT_EQ(jobs[1].tres_per_node, "");
  EXPECT_EQ(jobs[1].comment, "");
}

TEST(SqueueJson, ReadsNewerReleases) {
  const auto jobs = parse_squeue_json(kNewer);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].job_id, 9u);
  EXPECT_EQ(jobs[0].state, "SPECIAL_EXIT");
  EXPECT_EQ(jobs[0].exit_code, 75);
  EXPECT_EQ(jobs[0].restart_cnt, 2);
}

TEST(SqueueJson, RejectsWhatIsNotAJobList) {
  EXPECT_THROW(parse_squeue_json("squeue: error: Unable to contact slurm controller"), UserError);
  EXPECT_THROW(parse_squeue_json(R"({"errors":[]})"), UserError);
  EXPECT_THROW(parse_squeue_json(R"({"jobs":{}})"), UserError);
  // Entries without a usable id are skipped, not guessed at.
  EXPECT_TRUE(parse_squeue_json(R"({"jobs":[1,{"job_id":-3},{"job_id":"x"}]})").empty());
}

// squeue passes users' bytes through: a job named "\xff" must not make every other job unreadable.
TEST(SqueueJson, InvalidUtf8InOneJobLeavesTheListReadable) {
  const std::string out = std::string(R"({"jobs":[{"job_id":3,"user_id":5,"job_state":"RUNNING","name":")") +
                          "\xff\xc0" "bad" + R"(","comment":"colo:mem_mib=10"},{"job_id":4,"user_id":5,"job_state":"PENDING"}]})";
  const auto jobs = parse_squeue_json(out);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].comment, "colo:mem_mib=10");
  EXPECT_EQ(jobs[1].job_id, 4u);
}

}  // namespace
}  // namespace colo::slurm
