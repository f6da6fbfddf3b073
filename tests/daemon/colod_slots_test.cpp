// [slots]: fairness time slots with checkpointing, end to end in colod on fake GPUs with fake
// jobs that checkpoint (colo-fake-job --checkpoint-state). Two 30 GiB jobs cannot share one
// 40 GiB GPU, so while one runs the other waits and the running one's slot ends. Every wait is
// on observed state (attempt outcomes, job states, log lines), never on how long a slot lasts.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "daemon/client/api_client.h"
#include "daemon_harness.h"
#include "gpu/fake_nvml_env.h"

namespace colo::daemon::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

int attempts_with(const json& j, const std::string& outcome) {
  int n = 0;
  for (const json& a : j.at("attempts")) n += a.at("outcome") == outcome;
  return n;
}

std::string slots_config(const std::string& dir, double length, double notice) {
  const std::string path = dir + "/colod.toml";
  std::ofstream(path) << "[slots]\nlength_s = " << length << "\nnotice_s = " << notice << "\nmin_run_s = 0\n";
  return path;
}

// a: a --checkpoint job that takes the request but never checkpoints (gate-a ends it), running;
// b: a plain 30 GiB job (gate-b) that waits for a's GPU.
void ignoring_job_then_waiting_job(const ColodProcess& d, const std::string& dir, std::uint64_t& a, std::uint64_t& b) {
  const std::string fake = colo::gpu::fake_job_path();
  a = d.submit({"--checkpoint", "--mem", "30GiB", "--", fake, "--mem", "30GiB", "--checkpoint-state", dir + "/a.state",
                "--checkpoint-ignore", "--until-file", dir + "/gate-a"});
  ASSERT_TRUE(wait_until([&] { return show_job(d, a).at("state") == "running"; }, 60s));
  b = d.submit({"--mem", "30GiB", "--", fake, "--mem", "30GiB", "--until-file", dir + "/gate-b"});
}

// Both jobs checkpoint: they take turns on the GPU, each resuming from its own checkpoint,
// until both are let finish.
TEST(ColodSlots, CheckpointingJobsTakeTurnsAndResume) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB", {"--config", slots_config(dir.path(), 2, 1)});
  EXPECT_EQ(ApiClient(d.socket()).call("GET", "/v1/status").at("slots").at("notice_s"), 1);
  const std::string fake = colo::gpu::fake_job_path();
  auto job = [&](const std::string& tag) {
    return d.submit({"--checkpoint", "--mem", "30GiB", "--", fake, "--mem", "30GiB", "--checkpoint-state",
                     dir.path() + "/" + tag + ".state", "--until-file", dir.path() + "/gate-" + tag});
  };
  const std::uint64_t a = job("a");
  ASSERT_TRUE(wait_until([&] { return show_job(d, a).at("state") == "running"; }, 60s));
  const std::uint64_t b = job("b");
  // a's slot ends while b waits: a is asked, saves and leaves; b runs.
  ASSERT_TRUE(wait_until([&] { return attempts_with(show_job(d, a), "checkpointed") >= 1; }, 90s)) << show_job(d, a).dump(2);
  // b's slot ends while a waits: b checkpoints and a resumes from its saved state.
  ASSERT_TRUE(wait_until([&] { return attempts_with(show_job(d, b), "checkpointed") >= 1; }, 90s)) << show_job(d, b).dump(2);
  ASSERT_TRUE(wait_until([&] { return read_file(show_job(d, a).at("stdout")).find("resumed from checkpoint") != std::string::npos; },
                         90s))
      << read_file(show_job(d, a).at("stdout"));
  std::ofstream(dir.path() + "/gate-a").put('x');
  std::ofstream(dir.path() + "/gate-b").put('x');
  const json ra = d.wait_terminal(a, 90s), rb = d.wait_terminal(b, 90s);
  EXPECT_EQ(ra.at("state"), "done") << ra.dump(2);
  EXPECT_EQ(rb.at("state"), "done") << rb.dump(2);
  EXPECT_TRUE(ra.at("checkpoint").get<bool>());
  const json& first = ra.at("attempts").at(0);
  EXPECT_EQ(first.at("outcome"), "checkpointed");
  EXPECT_EQ(first.at("exit_code"), 75);
  EXPECT_FALSE(first.at("slot_notice").is_null());
  EXPECT_TRUE(first.at("slot_stop").is_null());  // it left by itself before its slot's end
  bool slot_event = false;
  for (const json& e : ra.at("events")) slot_event |= e.at("kind") == "slot";
  EXPECT_TRUE(slot_event);
  EXPECT_EQ(ra.at("attempts").back().at("outcome"), "done");
}

// A job that takes the request but does not checkpoint is stopped at its slot's end and queued
// again; it would lose every slot that way, so from then on it runs to its end. A job submitted
// without --checkpoint is never asked, however long others wait.
TEST(ColodSlots, AJobThatDoesNotCheckpointIsStoppedOnceThenRunsToItsEnd) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB", {"--config", slots_config(dir.path(), 2, 1)});
  const std::string gate_a = dir.path() + "/gate-a", gate_b = dir.path() + "/gate-b";
  std::uint64_t a = 0, b = 0;
  ASSERT_NO_FATAL_FAILURE(ignoring_job_then_waiting_job(d, dir.path(), a, b));
  ASSERT_TRUE(wait_until([&] { return attempts_with(show_job(d, a), "preempted") == 1; }, 90s)) << show_job(d, a).dump(2);
  json ra = show_job(d, a);
  EXPECT_FALSE(ra.at("checkpoint").get<bool>());
  EXPECT_FALSE(ra.at("attempts").at(0).at("slot_stop").is_null());
  EXPECT_NE(ra.at("reason").get<std::string>().find("without checkpointing"), std::string::npos) << ra.dump(2);
  ASSERT_TRUE(wait_until([&] { return show_job(d, b).at("state") == "running"; }, 60s));
  // b ends; a runs again and finishes.
  std::ofstream(gate_b).put('x');
  EXPECT_EQ(d.wait_terminal(b, 90s).at("state"), "done");
  std::ofstream(gate_a).put('x');
  ra = d.wait_terminal(a, 90s);
  EXPECT_EQ(ra.at("state"), "done") << ra.dump(2);
  const json rb = show_job(d, b);
  ASSERT_EQ(rb.at("attempts").size(), 1u) << rb.dump(2);  // never asked, never stopped
  EXPECT_TRUE(rb.at("attempts").at(0).at("slot_notice").is_null());
}

// Exit 75 means "checkpointed" only when colod asked; otherwise it is a failure that says why.
TEST(ColodSlots, TheCheckpointExitWithoutARequestIsAFailure) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB", {"--config", slots_config(dir.path(), 3600, 60)});
  const std::uint64_t id =
      d.submit({"--checkpoint", "--mem", "1GiB", "--", colo::gpu::fake_job_path(), "--mem", "1GiB", "--exit-code", "75"});
  const json r = d.wait_terminal(id, 60s);
  EXPECT_EQ(r.at("state"), "failed");
  EXPECT_NE(r.at("reason").get<std::string>().find("had not asked it to checkpoint"), std::string::npos) << r.dump(2);
}

// colod is killed -9 once a job has been asked (and maybe stopped): the restarted colod sends
// what may not have gone out, and every job still runs to its end, never two copies at once.
TEST(ColodSlots, KillNineAfterTheRequestLosesNothing) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB", {"--config", slots_config(dir.path(), 4, 3)});
  const std::string gate_a = dir.path() + "/gate-a", gate_b = dir.path() + "/gate-b";
  std::uint64_t a = 0, b = 0;
  ASSERT_NO_FATAL_FAILURE(ignoring_job_then_waiting_job(d, dir.path(), a, b));
  ASSERT_TRUE(wait_until([&] { return !show_job(d, a).at("attempts").at(0).at("slot_notice").is_null(); }, 90s));
  d.kill9();
  d.start();
  ASSERT_TRUE(wait_until([&] { return attempts_with(show_job(d, a), "preempted") == 1; }, 90s)) << show_job(d, a).dump(2) << d.log();
  ASSERT_TRUE(wait_until([&] { return show_job(d, b).at("state") == "running"; }, 60s));
  std::ofstream(gate_b).put('x');
  std::ofstream(gate_a).put('x');
  const json ra = d.wait_terminal(a, 90s), rb = d.wait_terminal(b, 90s);
  EXPECT_EQ(ra.at("state"), "done") << ra.dump(2);
  EXPECT_EQ(rb.at("state"), "done") << rb.dump(2);
  // One GPU, 30 GiB each: had two copies ever run at once, one would have died out of memory.
  EXPECT_EQ(attempts_with(ra, "oom") + attempts_with(rb, "oom"), 0);
  EXPECT_EQ(ra.at("attempts").size(), 2u) << ra.dump(2);
  EXPECT_EQ(rb.at("attempts").size(), 1u) << rb.dump(2);
}

}  // namespace
}  // namespace colo::daemon::testing
