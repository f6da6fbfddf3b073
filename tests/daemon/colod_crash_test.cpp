// kill -9 during a long run, every kill synchronised on observed state (never on a sleep):
// jobs are gated on files the test controls, so the test knows which jobs are running when it
// kills, which ones finish while colod is down (their shim's exit.json is on disk before the
// restart), and where a fault point makes colod kill itself inside the launch protocol. After
// every restart colod must re-adopt what runs, finish what ended while it was down, requeue what
// never started — and at the end every job has run exactly once (each job appends its id to a
// shared ledger when it starts).
//
// The same campaign runs bigger from scripts/crash-campaign.sh (COLO_CRASH_JOBS, COLO_CRASH_KILLS,
// COLO_CRASH_SEED); the suite runs a bounded smoke version.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "daemon/client/api_client.h"
#include "daemon/client/job_request.h"
#include "daemon/proc.h"
#include "daemon/store.h"
#include "daemon_harness.h"

namespace colo::daemon::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n <= 0 || n > 100000) throw std::runtime_error(std::string("bad ") + name + "=" + v);
  return static_cast<int>(n);
}

std::map<std::uint64_t, int> read_ledger(const std::string& path) {
  std::map<std::uint64_t, int> runs;
  std::ifstream in(path);
  std::uint64_t id = 0;
  while (in >> id) ++runs[id];
  return runs;
}

// True when some attempt of job `id` left its exit.json (the shim saw the job end).
bool exit_recorded(const std::string& state_dir, std::uint64_t id) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(state_dir + "/jobs/" + std::to_string(id), ec))
    if (e.path().filename().string().rfind("attempt-", 0) == 0 && fs::exists(e.path() / "exit.json")) return true;
  return false;
}

struct CampaignResult {
  int kills = 0, fault_kills = 0, starts = 0, adopted = 0, finished_while_down = 0, lost = 0, unstarted = 0;
  int jobs_lost = 0, jobs_run_twice = 0;
};

CampaignResult run_campaign(int jobs, int kills, unsigned seed) {
  TempDir dir;
  const std::string ledger = dir.path() + "/ran.txt";
  const std::string gates = dir.path() + "/gates";
  fs::create_directories(gates);
  ColodProcess d(dir.path(), "2x40GiB");
  const ApiClient api(d.socket());
  std::set<std::uint64_t> ids;
  for (int k = 0; k < jobs; ++k) {
    SubmitRequest r;
    // 4 GiB each: up to 9 share a 40 GiB GPU under MAGM (2 GiB margin). Each job records that
    // it started, then runs until the test opens its gate (polled every 0.2 s: a shorter
    // period makes 18 polling shells a fork storm that slows the whole machine).
    r.argv = {"/bin/sh", "-c",
              "echo $COLO_JOB_ID >> " + ledger + "; while [ ! -e " + gates + "/$COLO_JOB_ID ]; do sleep 0.2; done"};
    r.mem_mib = 4096;
    r.workdir = "/";
    const json body = to_json(r);
    ids.insert(api.call("POST", "/v1/jobs", &body).at("id").get<std::uint64_t>());
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(jobs));

  std::set<std::uint64_t> released;
  auto release = [&](std::uint64_t id) {
    std::ofstream(gates + "/" + std::to_string(id)).put('x');
    released.insert(id);
  };
  // Jobs the API shows running whose program really started (their id is in the ledger) and
  // whose gate is still closed: they are running now and will still be running after a kill.
  auto held_running = [&] {
    std::vector<std::uint64_t> out;
    const auto started = read_ledger(ledger);
    for (const json& j : api.call("GET", "/v1/jobs")) {
      const auto id = j.at("id").get<std::uint64_t>();
      if (j.at("state") == "running" && started.count(id) && !released.count(id)) out.push_back(id);
    }
    return out;
  };
  auto queued = [&] {
    int n = 0;
    for (const json& j : api.call("GET", "/v1/jobs")) n += j.at("state") == "queued";
    return n;
  };

  std::mt19937 rng(seed);
  const char* points[] = {"attempt-committed", "shim-spawned", "pid-committed", "go-sent"};
  CampaignResult res;
  for (int k = 0; res.kills < kills; ++k) {
    std::vector<std::uint64_t> held;
    EXPECT_TRUE(wait_until([&] { return !(held = held_running()).empty(); }, 120s, 50ms))
        << "kill " << k << ": no job running\n" << d.log();
    if (held.empty()) break;
    std::shuffle(held.begin(), held.end(), rng);
    const bool fault = k % 2 == 1 && queued() >= 4;
    if (!fault) {
      // kill -9 while jobs run; a few gates open just before (they end around the kill), a few
      // while colod is down (their exit.json is written before the restart).
      size_t at = 0;
      for (; at < held.size() && at < 2; ++at) release(held[at]);
      d.kill9();
      ++res.kills;
      std::vector<std::uint64_t> while_down;
      for (; at < held.size() && while_down.size() < 3; ++at) {
        release(held[at]);
        while_down.push_back(held[at]);
      }
      EXPECT_TRUE(wait_until(
          [&] {
            for (auto id : while_down)
              if (!exit_recorded(dir.path(), id)) return false;
            return true;
          },
          120s, 50ms));
      d.start();
    } else {
      // Restart colod armed to kill itself at the N-th launch step of one kind, then open gates
      // so that it launches: the kill lands inside the launch protocol.
      const char* point = points[(k / 2) % 4];
      const int nth = 1 + static_cast<int>(rng() % 2);
      d.kill9();
      ++res.kills;
      d.set_env({{"COLO_FAULT_KILL_AT", std::string(point) + ":" + std::to_string(nth)}});
      const bool up = d.start(/*may_exit=*/true);
      if (up) {
        for (size_t at = 0; at < held.size() && at < 3; ++at) release(held[at]);
        EXPECT_TRUE(d.wait_exit(120s)) << "colod did not reach " << point << ":" << nth << "\n" << d.log();
      }
      ++res.kills;
      ++res.fault_kills;
      d.set_env({});
      d.start();
    }
  }
  for (std::uint64_t id : ids) release(id);
  auto all_done = [&] {
    int done = 0;
    for (const json& j : api.call("GET", "/v1/jobs?all=1")) done += j.at("state") == "done";
    return done == jobs;
  };
  EXPECT_TRUE(wait_until(all_done, 300s, 100ms)) << api.call("GET", "/v1/jobs").dump(1) << d.log();

  const auto runs = read_ledger(ledger);
  for (std::uint64_t j : ids) {
    const int n = runs.count(j) ? runs.at(j) : 0;
    EXPECT_EQ(n, 1) << "job " << j << " ran " << n << " times";
    res.jobs_lost += n == 0;
    res.jobs_run_twice += n > 1;
  }
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
  for (size_t at = log.find("colod: recovery: "); at != std::string::npos; at = log.find("colod: recovery: ", at + 1)) {
    int a = 0, f = 0, l = 0, u = 0;
    if (std::sscanf(log.c_str() + at,
                    "colod: recovery: %d running job(s) re-adopted, %d finished while colod was down, %d lost, %d",
                    &a, &f, &l, &u) == 4) {
      res.adopted += a;
      res.finished_while_down += f;
      res.lost += l;
      res.unstarted += u;
      ++res.starts;
    }
  }
  EXPECT_EQ(res.starts, res.kills + 1);
  return res;
}

TEST(ColodCrash, KillNineOnObservedStateLosesNothingAndRunsNothingTwice) {
  const int jobs = env_int("COLO_CRASH_JOBS", 60);
  const int kills = env_int("COLO_CRASH_KILLS", 8);
  const unsigned seed = static_cast<unsigned>(env_int("COLO_CRASH_SEED", 20261123));
  const CampaignResult r = run_campaign(jobs, kills, seed);
  EXPECT_EQ(r.lost, 0);
  EXPECT_EQ(r.jobs_lost, 0);
  EXPECT_EQ(r.jobs_run_twice, 0);
  // Every kill hit running jobs (the gates hold them), and every release-while-down finished
  // while colod was down: both recovery paths were exercised, deterministically.
  EXPECT_GT(r.adopted, 0);
  EXPECT_GT(r.finished_while_down, 0);
  if (kills >= 2) {
    EXPECT_GT(r.fault_kills, 0);
  }
  // One machine-readable line for scripts/crash-campaign.sh and docs/RELIABILITY.md.
  std::cout << "crash-campaign: jobs " << jobs << " kills " << r.kills << " (inside the launch protocol "
            << r.fault_kills << ") re-adopted " << r.adopted << " finished-while-down " << r.finished_while_down
            << " never-started " << r.unstarted << " lost " << r.lost << " jobs-lost " << r.jobs_lost
            << " jobs-run-twice " << r.jobs_run_twice << "\n";
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
  r.argv = {"/bin/sh", "-c", "echo $COLO_JOB_ID >> " + ran};
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
  // No sleep: every shim of this job (one per attempt directory with a spec) has ended and left
  // its exit.json, so no copy can still start later; only then is the ledger final.
  ASSERT_TRUE(wait_until(
      [&] {
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(dir.path() + "/jobs/" + std::to_string(id), ec))
          if (fs::exists(e.path() / "spec.json") && !fs::exists(e.path() / "exit.json")) return false;
        return true;
      },
      60s, 50ms));
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

// Killed after "go" and before the running state was recorded: the job runs on under its shim,
// and the restarted colod shows it running (with a start time) — not placed for its whole run,
// where time slots and the queue would never count it as started.
TEST(ColodCrash, AJobReadoptedAfterGoIsRunningNotPlaced) {
  TempDir dir;
  const std::string gate = dir.path() + "/gate", up = dir.path() + "/up";
  ColodProcess d(dir.path(), "1x40GiB");
  d.stop();
  d.set_env({{"COLO_FAULT_KILL_AT", "go-sent"}});
  d.start();
  const ApiClient api(d.socket());
  SubmitRequest r;
  r.argv = {"/bin/sh", "-c", "touch " + up + "; " + fifo_gate(gate)};
  r.mem_mib = 1024;
  r.workdir = "/";
  const json body = to_json(r);
  const std::uint64_t id = api.call("POST", "/v1/jobs", &body).at("id").get<std::uint64_t>();
  ASSERT_TRUE(d.wait_exit(30s)) << "colod did not reach fault point go-sent";
  ASSERT_TRUE(wait_until([&] { return fs::exists(up); }, 30s, 20ms));  // the program runs
  d.set_env({});
  d.start();
  const json job = api.call("GET", "/v1/jobs/" + std::to_string(id));  // re-adoption happens before the API answers
  EXPECT_EQ(job.at("state"), "running") << job.dump(2);
  ASSERT_EQ(job.at("attempts").size(), 1u) << job.dump(2);
  EXPECT_EQ(job.at("attempts")[0].at("state"), "running") << job.dump(2);
  EXPECT_FALSE(job.at("attempts")[0].at("start_time").is_null()) << job.dump(2);
  open_gate(gate);
  json end;
  ASSERT_TRUE(wait_until([&] { return (end = api.call("GET", "/v1/jobs/" + std::to_string(id))).at("state") == "done"; },
                         60s, 100ms)) << end.dump(2);
}

// A job that ran out of memory beside another, while colod was down, is planned as a shared
// crash after the restart (loose: a retry with more free memory, beside the other job) — not
// as if it had had the GPU to itself (a retry on an idle GPU, which waits for its neighbour).
TEST(ColodCrash, AnOomBesideAnotherJobWhileColodWasDownIsASharedCrash) {
  TempDir dir;
  std::ofstream(dir.path() + "/colod.toml") << "[recovery]\nmode = \"loose\"\n";
  ColodProcess d(dir.path(), "1x40GiB", {"--config", dir.path() + "/colod.toml"});
  const std::string p = dir.path() + "/";
  const std::uint64_t c = d.submit(
      {"--mem", "10GiB", "--", "/bin/sh", "-c",
       "if [ \"$COLO_ATTEMPT\" = 1 ]; then touch " + p + "c-up; " + fifo_gate(p + "gC") + "; "
       "echo 'torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB' >&2; exit 1; fi"});
  const std::uint64_t a = d.submit({"--mem", "10GiB", "--", "/bin/sh", "-c",
                                    "touch " + p + "a-up; " + fifo_gate(p + "gA")});
  ASSERT_TRUE(wait_until([&] { return fs::exists(p + "c-up") && fs::exists(p + "a-up"); }, 60s));
  d.kill9();
  open_gate(p + "gC");
  const std::string exit_json = p + "jobs/" + std::to_string(c) + "/attempt-1/exit.json";
  ASSERT_TRUE(wait_until([&] { return fs::exists(exit_json); }, 60s));
  d.start();
  // Job a still runs: the retry fits beside it and finishes without waiting for it.
  json jc;
  ASSERT_TRUE(wait_until([&] { return (jc = d.colo_json({"show", std::to_string(c), "--json"})).at("state") == "done"; },
                         60s)) << jc.dump(2);
  EXPECT_EQ(d.colo_json({"show", std::to_string(a), "--json"}).at("state"), "running");
  ASSERT_EQ(jc.at("attempts").size(), 2u) << jc.dump(2);
  EXPECT_EQ(jc.at("attempts")[0].at("outcome"), "oom");
  EXPECT_FALSE(jc.at("attempts")[1].at("exclusive").get<bool>()) << jc.dump(2);
  open_gate(p + "gA");
  EXPECT_EQ(d.wait_terminal(a).at("state"), "done");
}

INSTANTIATE_TEST_SUITE_P(Points, LaunchWindow,
                         ::testing::Values("attempt-committed", "shim-spawned", "pid-committed", "go-sent"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string n = i.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// A lost attempt's recorded shim pid is signalled only while it can still be that shim's: after
// a reboot (told by the attempt's boot record, or for an older colod's attempt by its spec.json's
// time) it may name any process of the new boot, even with the same start time; and in the same
// boot a pid whose start time differs was reused once the session emptied. In each case the
// process now holding the number (a stand-in, leading its own session) must survive the
// recovery, and the job must run again.
enum class Stale { OtherBootRecord, OlderColodBeforeBoot, PidReused };
class LostShimPid : public ::testing::TestWithParam<Stale> {};

TEST_P(LostShimPid, RecoveryNeverSignalsTheProcessThatNowHasTheNumber) {
  TempDir dir;
  const std::string p = dir.path() + "/", gate = p + "gate";
  ColodProcess d(dir.path(), "1x40GiB");
  const std::uint64_t id =
      d.submit({"--mem", "1GiB", "--", "/bin/sh", "-c",
                "echo $PPID > " + p + "shim-$COLO_ATTEMPT.tmp; mv " + p + "shim-$COLO_ATTEMPT.tmp " + p +
                    "shim-$COLO_ATTEMPT; " + fifo_gate(gate)});
  pid_t shim = 0;
  ASSERT_TRUE(wait_until([&] { return std::ifstream(p + "shim-1") >> shim && shim > 0; }, 60s, 20ms));
  ASSERT_TRUE(wait_until([&] { return show_job(d, id).at("state") == "running"; }, 60s));
  // The machine goes down: colod, the shim and the job with it.
  d.kill9();
  kill_session(shim);
  ASSERT_TRUE(wait_until([&] { return processes_in_session(shim).empty(); }, 30s, 20ms));

  // The stand-in: a session leader of its own, alive throughout.
  const pid_t other = ::fork();
  ASSERT_GE(other, 0);
  if (other == 0) {
    ::setsid();
    const int null = ::open("/dev/null", O_RDWR);  // holds none of the test's pipes
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl("/usr/bin/tail", "tail", "-f", "/dev/null", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  struct Reap {
    pid_t pid;
    ~Reap() {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reap_other{other};
  std::optional<ProcStat> other_stat;
  ASSERT_TRUE(wait_until([&] { return (other_stat = read_proc_stat(other)) && other_stat->session == other; }, 30s, 5ms));
  {
    Store store(dir.path() + "/colo.db");
    auto open = store.open_attempts();
    ASSERT_EQ(open.size(), 1u);
    AttemptRow a = open[0];
    a.shim_pid = other;
    switch (GetParam()) {
      case Stale::OtherBootRecord:  // even its start time matches: only the boot tells
        a.shim_start = static_cast<std::int64_t>(other_stat->start_ticks);
        std::ofstream(a.dir + "/boot") << "00000000-0000-4000-8000-000000000000\n";
        break;
      case Stale::OlderColodBeforeBoot: {
        a.shim_start = static_cast<std::int64_t>(other_stat->start_ticks);
        ASSERT_TRUE(fs::remove(a.dir + "/boot"));
        const timespec long_ago[2] = {{1000, 0}, {1000, 0}};
        ASSERT_EQ(::utimensat(AT_FDCWD, (a.dir + "/spec.json").c_str(), long_ago, 0), 0);
        break;
      }
      case Stale::PidReused:
        a.shim_start = static_cast<std::int64_t>(other_stat->start_ticks) + 1;
        break;
    }
    store.update_attempt(a);
  }
  d.start();
  // Attempt 2 runs (it publishes its shim): attempt 1 was found lost, not re-adopted.
  pid_t shim2 = 0;
  ASSERT_TRUE(wait_until([&] { return std::ifstream(p + "shim-2") >> shim2 && shim2 > 0; }, 60s, 20ms)) << d.log();
  EXPECT_EQ(process_liveness(other, other_stat->start_ticks), Liveness::Alive) << d.log();
  open_gate(gate);
  const json j = d.wait_terminal(id);
  EXPECT_EQ(j.at("state"), "done") << j.dump(2);
  ASSERT_EQ(j.at("attempts").size(), 2u) << j.dump(2);
  EXPECT_EQ(j.at("attempts")[0].at("outcome"), "lost") << j.dump(2);
}

INSTANTIATE_TEST_SUITE_P(Cases, LostShimPid,
                         ::testing::Values(Stale::OtherBootRecord, Stale::OlderColodBeforeBoot, Stale::PidReused),
                         [](const ::testing::TestParamInfo<Stale>& i) {
                           switch (i.param) {
                             case Stale::OtherBootRecord: return std::string("OtherBootRecord");
                             case Stale::OlderColodBeforeBoot: return std::string("OlderColodBeforeBoot");
                             case Stale::PidReused: return std::string("PidReused");
                           }
                           return std::string();
                         });

}  // namespace
}  // namespace colo::daemon::testing
