// kill -9 at random instants during a 100-job run: after every restart colod re-adopts what
// is running, finishes what ended while it was down, requeues what never started — and at the
// end every job has run exactly once (each job appends its id to a shared file).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "daemon/client/api_client.h"
#include "daemon/client/job_request.h"
#include "daemon_harness.h"

namespace colo::daemon::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

TEST(ColodCrash, KillNineDuringAHundredJobsLosesNothingAndRunsNothingTwice) {
  TempDir dir;
  const std::string ledger = dir.path() + "/ran.txt";
  ColodProcess d(dir.path(), "2x40GiB");
  const ApiClient api(d.socket());
  constexpr int kJobs = 100;
  std::set<std::uint64_t> ids;
  std::mt19937 rng(20261122);
  std::uniform_int_distribution<int> ms(0, 250);
  for (int k = 0; k < kJobs; ++k) {
    SubmitRequest r;
    // Short, varied jobs; 4 GiB each, so up to 9 share a 40 GiB GPU under MAGM (2 GiB margin).
    r.argv = {"/bin/sh", "-c", "echo $COLO_JOB_ID >> " + ledger + "; sleep 0." + std::to_string(ms(rng) / 40 + 2)};
    r.mem_mib = 4096;
    r.workdir = "/";
    const json body = to_json(r);
    ids.insert(api.call("POST", "/v1/jobs", &body).at("id").get<std::uint64_t>());
  }
  ASSERT_EQ(ids.size(), static_cast<size_t>(kJobs));

  auto all_done = [&] {
    const json jobs = api.call("GET", "/v1/jobs?all=1");
    int done = 0;
    for (const json& j : jobs) done += j.at("state") == "done";
    return done == kJobs;
  };
  // Kill at random instants while the run is in progress: at least 10 times, at most 20.
  std::uniform_int_distribution<int> pause_ms(20, 700);
  int kills = 0;
  for (; kills < 20 && (kills < 10 || !all_done()); ++kills) {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));
    d.kill9();
    d.start();
  }
  ASSERT_TRUE(wait_until(all_done, 180s, 250ms)) << api.call("GET", "/v1/jobs").dump(1) << d.log();

  std::map<std::uint64_t, int> runs;
  std::ifstream in(ledger);
  std::uint64_t id = 0;
  while (in >> id) ++runs[id];
  for (std::uint64_t j : ids) EXPECT_EQ(runs[j], 1) << "job " << j << " ran " << runs[j] << " times";
  EXPECT_EQ(runs.size(), ids.size());
  // Every job started exactly one attempt; extra attempt rows may only be launches that never
  // started (colod died before the "go").
  for (std::uint64_t j : ids) {
    const json s = api.call("GET", "/v1/jobs/" + std::to_string(j));
    EXPECT_EQ(s.at("attempt_count"), 1) << s.dump(2);
    int started = 0;
    for (const json& a : s.at("attempts")) {
      if (a.at("outcome") != "not_started") ++started;
      EXPECT_NE(a.at("outcome"), "lost") << s.dump(2);
    }
    EXPECT_EQ(started, 1) << s.dump(2);
  }
  // What the restarts found (colod logs one recovery line per start).
  const std::string log = d.log();
  int adopted = 0, finished = 0, unstarted = 0, starts = 0;
  for (size_t at = log.find("colod: recovery: "); at != std::string::npos; at = log.find("colod: recovery: ", at + 1)) {
    int a = 0, f = 0, l = 0, u = 0;
    if (std::sscanf(log.c_str() + at,
                    "colod: recovery: %d running job(s) re-adopted, %d finished while colod was down, %d lost, %d",
                    &a, &f, &l, &u) == 4) {
      adopted += a;
      finished += f;
      unstarted += u;
      EXPECT_EQ(l, 0);
      ++starts;
    }
  }
  EXPECT_EQ(starts, kills + 1);
  EXPECT_GT(adopted, 0) << "no kill hit a running job: the test did not test re-adoption";
  std::cerr << "kills: " << kills << ", re-adopted " << adopted << ", finished while down " << finished
            << ", launches never started " << unstarted << "\n";
}

// colod SIGKILLs itself at each step of the launch protocol in turn (docs/DAEMON.md): after
// the attempt row is committed, after the shim is spawned, after its pid is committed, after
// "go" is sent. The restarted colod must run every job exactly once.
class LaunchWindow : public ::testing::TestWithParam<const char*> {};

TEST_P(LaunchWindow, KillInsideTheLaunchProtocolRunsTheJobExactlyOnce) {
  TempDir dir;
  const std::string ran = dir.path() + "/ran.txt";
  ColodProcess d(dir.path(), "1x40GiB");
  d.stop();
  d.set_env({{"COLO_FAULT_KILL_AT", GetParam()}});
  d.start();
  const ApiClient api(d.socket());
  SubmitRequest r;
  r.argv = {"/bin/sh", "-c", "echo $COLO_JOB_ID >> " + ran + "; sleep 0.5"};
  r.mem_mib = 1024;
  r.workdir = "/";
  const json body = to_json(r);
  const std::uint64_t id = api.call("POST", "/v1/jobs", &body).at("id").get<std::uint64_t>();
  ASSERT_TRUE(d.wait_exit(30s)) << "colod did not reach fault point " << GetParam();
  d.set_env({});
  d.start();
  json job;
  ASSERT_TRUE(wait_until(
      [&] {
        job = api.call("GET", "/v1/jobs/" + std::to_string(id));
        return job.at("state") == "done";
      },
      60s, 100ms))
      << job.dump(2) << d.log();
  std::this_thread::sleep_for(700ms);  // a second copy, had one started, would have written by now
  std::ifstream in(ran);
  std::vector<std::uint64_t> lines;
  std::uint64_t x = 0;
  while (in >> x) lines.push_back(x);
  EXPECT_EQ(lines, std::vector<std::uint64_t>{id}) << GetParam();
  EXPECT_EQ(job.at("attempt_count"), 1) << job.dump(2);
  const std::string point = GetParam();
  const json& attempts = job.at("attempts");
  if (point == "go-sent") {
    ASSERT_EQ(attempts.size(), 1u) << job.dump(2);  // the started attempt was re-adopted
  } else {
    ASSERT_EQ(attempts.size(), 2u) << job.dump(2);  // the first launch never started the program
    EXPECT_EQ(attempts[0].at("outcome"), "not_started");
  }
  EXPECT_EQ(attempts.back().at("outcome"), "done");
}

INSTANTIATE_TEST_SUITE_P(Points, LaunchWindow,
                         ::testing::Values("attempt-committed", "shim-spawned", "pid-committed", "go-sent"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string n = i.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace colo::daemon::testing
