// End-to-end: the real build/colod on the fake NVML, driven by the real build/colo.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "daemon_harness.h"
#include "gpu/fake_nvml_env.h"

namespace colo::daemon::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string fake_job() { return colo::gpu::fake_job_path(); }

// Shell that returns once `path` exists: jobs end when the test says so, never on a timer.
std::string wait_for_file(const std::string& path) {
  return "while [ ! -e " + path + " ]; do sleep 0.2; done";
}

// Did two attempts run on the same GPU at the same time?
bool overlap_on_same_gpu(const std::vector<json>& jobs) {
  for (size_t a = 0; a < jobs.size(); ++a)
    for (size_t b = a + 1; b < jobs.size(); ++b)
      for (const json& x : jobs[a].at("attempts"))
        for (const json& y : jobs[b].at("attempts")) {
          if (x.at("start_time").is_null() || y.at("start_time").is_null()) continue;
          bool same = false;
          for (const json& gx : x.at("gpus"))
            for (const json& gy : y.at("gpus")) same = same || gx == gy;
          if (!same) continue;
          const double xs = x.at("start_time"), xe = x.at("end_time"), ys = y.at("start_time"), ye = y.at("end_time");
          if (xs < ye && ys < xe) return true;
        }
  return false;
}

TEST(ColodE2E, SubmitQueueShowLogsCancel) {
  TempDir dir;
  ColodProcess d(dir.path(), "2x40GiB");
  // The job runs until the test opens its gate: it is certainly still listed by `colo queue`.
  const std::string gate = dir.path() + "/gate";
  const std::uint64_t id = d.submit({"--gpus", "1", "--mem", "10GiB", "--name", "t1", "--", "/bin/sh", "-c",
                                     "echo hello from $COLO_JOB_ID on $CUDA_VISIBLE_DEVICES; echo oops >&2; " +
                                         wait_for_file(gate)});
  EXPECT_GE(id, 1u);
  const json q = d.colo_json({"queue", "--json"});
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].at("name"), "t1");
  std::ofstream(gate).put('x');

  const json j = d.wait_terminal(id);
  EXPECT_EQ(j.at("state"), "done") << j.dump(2);
  EXPECT_EQ(j.at("exit_code"), 0);
  ASSERT_EQ(j.at("gpus").size(), 1u);
  EXPECT_EQ(j.at("gpus")[0].at("uuid").get<std::string>().rfind("GPU-", 0), 0u);
  ASSERT_EQ(j.at("attempts").size(), 1u);
  EXPECT_EQ(j.at("attempts")[0].at("outcome"), "done");
  EXPECT_EQ(j.at("need_mib"), 10240);

  RunResult logs = d.colo({"logs", std::to_string(id)});
  EXPECT_EQ(logs.rc, 0);
  EXPECT_EQ(logs.out, "hello from " + std::to_string(id) + " on " + j.at("gpus")[0].at("uuid").get<std::string>() + "\n");
  EXPECT_EQ(d.colo({"logs", std::to_string(id), "--stderr"}).out, "oops\n");
  EXPECT_EQ(d.colo_json({"queue", "--json"}).size(), 0u);
  EXPECT_EQ(d.colo_json({"queue", "--all", "--json"}).size(), 1u);

  // Cancel a running job: SIGTERM reaches its process group; the job ends cancelled.
  const std::uint64_t long_id = d.submit({"--mem", "1GiB", "--", "/bin/sh", "-c", "echo started; sleep 60"});
  ASSERT_TRUE(wait_until([&] { return d.colo_json({"show", std::to_string(long_id), "--json"}).at("state") == "running"; }, 20s));
  ASSERT_TRUE(wait_until([&] { return d.colo({"logs", std::to_string(long_id)}).out == "started\n"; }, 20s));
  RunResult c = d.colo({"cancel", std::to_string(long_id)});
  EXPECT_EQ(c.rc, 0) << c.err;
  const json cj = d.wait_terminal(long_id, 30s);
  EXPECT_EQ(cj.at("state"), "cancelled");
  EXPECT_EQ(cj.at("attempts")[0].at("signal"), 15);
  // logs -f returns once the job has ended.
  EXPECT_EQ(d.colo({"logs", "-f", std::to_string(long_id)}).out, "started\n");
  // Cancelling a queued job (all GPUs drained) is immediate.
  ASSERT_EQ(d.colo({"drain", "0"}).rc, 0);
  ASSERT_EQ(d.colo({"drain", "1"}).rc, 0);
  const std::uint64_t q_id = d.submit({"--", "/bin/true"});
  EXPECT_EQ(d.colo_json({"cancel", std::to_string(q_id), "--json"}).at("state"), "cancelled");
  RunResult again = d.colo({"cancel", std::to_string(q_id)});
  EXPECT_EQ(again.rc, 2);
  EXPECT_NE(again.err.find("already ended"), std::string::npos) << again.err;
  // Several ids: one that cannot be cancelled is named, the others are still cancelled.
  const std::uint64_t q2 = d.submit({"--", "/bin/true"});
  RunResult several = d.colo({"cancel", "99", std::to_string(q_id), std::to_string(q2)});
  EXPECT_EQ(several.rc, 2);
  EXPECT_NE(several.err.find("99"), std::string::npos) << several.err;
  EXPECT_NE(several.err.find("2 of 3 jobs not cancelled"), std::string::npos) << several.err;
  EXPECT_EQ(d.colo_json({"show", std::to_string(q2), "--json"}).at("state"), "cancelled");
  const json gpus = d.colo_json({"gpus", "--json"});
  EXPECT_TRUE(gpus[0].at("drained").get<bool>());
  ASSERT_EQ(d.colo({"resume", "0"}).rc, 0);
  EXPECT_FALSE(d.colo_json({"gpus", "--json"})[0].at("drained").get<bool>());
  // Nothing to resume on a GPU that is not drained; a reason is one line; a GPU is a name.
  RunResult twice = d.colo({"resume", "0"});
  EXPECT_EQ(twice.rc, 2);
  EXPECT_NE(twice.err.find("GPU 0 is not drained"), std::string::npos) << twice.err;
  RunResult forged = d.colo({"drain", "0", "--reason", "fine\nGPU 1 ok"});
  EXPECT_EQ(forged.rc, 2);
  EXPECT_NE(forged.err.find("field 'reason': contains a control character (\\n)"), std::string::npos) << forged.err;
  EXPECT_FALSE(d.colo_json({"gpus", "--json"})[0].at("drained").get<bool>());
  RunResult route = d.colo({"drain", "0/../1"});
  EXPECT_EQ(route.rc, 2);
  EXPECT_NE(route.err.find("expected an index"), std::string::npos) << route.err;
  EXPECT_NE(d.colo({"show", "999"}).err.find("job 999 not found"), std::string::npos);
}

// Four 8 GiB fake training jobs, each held until a gate opens. With `hold_until_all_run` the
// gate opens only once all four run and the monitor has seen each one's memory (MAGM: they must
// share); otherwise at once (exclusive: they queue behind each other).
std::vector<json> run_four_jobs(const std::string& policy, bool hold_until_all_run) {
  TempDir dir;
  ColodProcess d(dir.path(), "2x40GiB", {"--policy", policy});
  const std::string gate = dir.path() + "/gate";
  if (!hold_until_all_run) std::ofstream(gate).put('x');
  std::vector<std::uint64_t> ids;
  for (int k = 0; k < 4; ++k)
    ids.push_back(d.submit({"--mem", "8GiB", "--", "/bin/sh", "-c",
                            fake_job() + " --mem 8GiB --hold inf --sm-activity 0.2 & p=$!; " + wait_for_file(gate) +
                                "; kill $p; wait $p; exit 0"}));
  if (hold_until_all_run) {
    EXPECT_TRUE(wait_until(
        [&] {
          for (auto id : ids) {
            const json j = d.colo_json({"show", std::to_string(id), "--json"});
            if (j.at("state") != "running" || j.at("attempts").back().at("peak_mib").is_null() ||
                j.at("attempts").back().at("peak_mib").get<int>() < 8 * 1024)
              return false;
          }
          return true;
        },
        120s))
        << d.log();
    std::ofstream(gate).put('x');
  }
  std::vector<json> jobs;
  for (auto id : ids) {
    jobs.push_back(d.wait_terminal(id, 90s));
    EXPECT_EQ(jobs.back().at("state"), "done") << jobs.back().dump(2) << d.log();
  }
  return jobs;
}

TEST(ColodE2E, MagmCollocatesExclusiveDoesNot) {
  const std::vector<json> magm = run_four_jobs("magm", true);
  EXPECT_TRUE(overlap_on_same_gpu(magm)) << "MAGM should run two 8 GiB jobs on one 40 GiB GPU at once";
  // MAGM spreads: the first two jobs land on different GPUs (most free memory first).
  EXPECT_NE(magm[0].at("gpus")[0].at("index"), magm[1].at("gpus")[0].at("index"));
  for (const json& j : magm) EXPECT_GE(j.at("attempts")[0].at("peak_mib").get<int>(), 8 * 1024) << j.dump(2);

  const std::vector<json> excl = run_four_jobs("exclusive", false);
  EXPECT_FALSE(overlap_on_same_gpu(excl)) << "exclusive must never share a GPU";
}

TEST(ColodE2E, InjectedOomGoesThroughRecoveryAndFinishes) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  // Both claim 10 GiB, so the ledger collocates them; together they really need 50 GiB. The GPU
  // is drained while both are submitted, so one scheduling round places both (however slow the
  // machine). "big" ramps up, "liar" takes its 20 GiB at once: whichever allocates second hits
  // the 40 GiB wall and crashes with PyTorch's OOM.
  ASSERT_EQ(d.colo({"drain", "0"}).rc, 0);
  const std::uint64_t a = d.submit({"--mem", "10GiB", "--name", "big", "--", fake_job(), "--mem", "30GiB", "--ramp", "3", "--hold", "1"});
  const std::uint64_t b = d.submit({"--mem", "10GiB", "--name", "liar", "--", fake_job(), "--mem", "20GiB", "--hold", "4"});
  ASSERT_EQ(d.colo({"resume", "0"}).rc, 0);
  const json ja = d.wait_terminal(a, 90s), jb = d.wait_terminal(b, 90s);
  EXPECT_EQ(ja.at("state"), "done") << ja.dump(2);
  EXPECT_EQ(jb.at("state"), "done") << jb.dump(2);
  int ooms = 0;
  for (const json& j : {ja, jb})
    for (const json& at : j.at("attempts"))
      if (at.at("outcome") == "oom") {
        ++ooms;
        EXPECT_NE(at.at("evidence").get<std::string>().find("CUDA out of memory"), std::string::npos) << at.dump();
      }
  EXPECT_GE(ooms, 1) << ja.dump(2) << jb.dump(2);
  // Strict recovery: the retry ran alone.
  for (const json& j : {ja, jb}) {
    const json& attempts = j.at("attempts");
    if (attempts.size() > 1) {
      EXPECT_EQ(attempts[0].at("outcome"), "oom");
      EXPECT_TRUE(attempts.back().at("exclusive").get<bool>());
      EXPECT_TRUE(attempts.back().at("recovery").get<bool>());
      EXPECT_EQ(j.at("attempt_count"), static_cast<int>(attempts.size()));
    }
  }
  // History: the same job submitted again plans with what it really used (30 GiB + 10 %).
  const std::uint64_t again = d.submit({"--mem", "10GiB", "--name", "big", "--", fake_job(), "--mem", "30GiB", "--ramp", "3", "--hold", "1"});
  const json jr = d.colo_json({"show", std::to_string(again), "--json"});
  EXPECT_EQ(jr.at("need_source"), "history") << jr.dump(2);
  EXPECT_GE(jr.at("need_mib").get<int>(), 30 * 1024);
  d.colo({"cancel", std::to_string(again)});
  d.wait_terminal(again, 30s);
}

// While a retry runs, the job shows that attempt — not the reason and exit code that ended the
// previous one (those stay with that attempt and in the events).
TEST(ColodE2E, ARunningRetryDoesNotShowThePreviousAttemptsEnd) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  const std::string up = dir.path() + "/up2", gate = dir.path() + "/gate";
  const std::uint64_t id = d.submit(
      {"--mem", "1GiB", "--", "/bin/sh", "-c",
       "if [ \"$COLO_ATTEMPT\" = 1 ]; then echo 'torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB' >&2; "
       "exit 1; fi; touch " + up + "; " + fifo_gate(gate)});
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(up); }, 60s)) << d.colo({"show", std::to_string(id)}).out;
  json j;
  ASSERT_TRUE(wait_until([&] { return (j = d.colo_json({"show", std::to_string(id), "--json"})).at("state") == "running"; }, 60s))
      << j.dump(2);
  EXPECT_TRUE(j.at("exit_code").is_null()) << j.dump(2);
  EXPECT_EQ(j.at("reason"), "") << j.dump(2);
  EXPECT_EQ(j.at("attempts").at(0).at("outcome"), "oom") << j.dump(2);
  open_gate(gate);
  EXPECT_EQ(d.wait_terminal(id).at("state"), "done");
}

// jobs.max_log bounds what each attempt writes to its logs; the head and the tail are kept, and
// the OOM detector still finds a framework's message written past the cap.
TEST(ColodE2E, LogsPastMaxLogKeepTheirHeadAndTailAndTheOomIsStillSeen) {
  TempDir dir;
  std::ofstream(dir.path() + "/colod.toml") << "[jobs]\nmax_log = 1\n";
  ColodProcess d(dir.path(), "1x40GiB", {"--config", dir.path() + "/colod.toml"});
  const std::string three_mib = "head -c 3145728 /dev/zero | tr '\\0' ";
  const std::uint64_t id = d.submit(
      {"--mem", "1GiB", "--", "/bin/sh", "-c",
       "if [ \"$COLO_ATTEMPT\" = 1 ]; then " + three_mib + "e >&2; echo >&2; "
       "echo 'torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB' >&2; " +
           three_mib + "o; echo; echo THE-END; exit 1; fi; echo second"});
  const json j = d.wait_terminal(id, 90s);
  EXPECT_EQ(j.at("state"), "done") << j.dump(2);
  ASSERT_GE(j.at("attempts").size(), 2u) << j.dump(2);
  EXPECT_EQ(j.at("attempts").at(0).at("outcome"), "oom") << j.dump(2);
  const std::string out = d.colo({"logs", std::to_string(id)}).out;
  const std::string err = d.colo({"logs", std::to_string(id), "--stderr"}).out;
  const std::size_t mib = 1 << 20;
  for (const std::string* log : {&out, &err}) {
    EXPECT_LT(log->size(), 2 * mib + 1024);  // 1 MiB written, the last 1 MiB kept, two notes
    EXPECT_NE(log->find("passed jobs.max_log = 1 MiB"), std::string::npos);
    EXPECT_NE(log->find("bytes of this attempt's"), std::string::npos);
  }
  EXPECT_EQ(out.substr(0, mib), std::string(mib, 'o'));
  EXPECT_EQ(out.substr(out.size() - 16), "\nTHE-END\nsecond\n");  // attempt 2 appended after the tail
  EXPECT_EQ(err.substr(0, mib), std::string(mib, 'e'));
  EXPECT_NE(err.find("CUDA out of memory. Tried to allocate 2.00 GiB\n"), std::string::npos);
  // How much was not kept is in the job's record too: 3 MiB + 9 bytes of stdout, 3 MiB + 77 of
  // stderr, each less the 1 MiB written and the 1 MiB kept.
  const std::string record = d.colo_json({"show", std::to_string(id), "--json"}).at("events").dump();
  EXPECT_NE(record.find("attempt 1: output past jobs.max_log not kept: 1048585 bytes of stdout, 1048653 bytes of stderr"),
            std::string::npos)
      << record;
}

// jobs.keep_logs_days: a finished job's directory goes once it ended that long ago (its row and
// `colo show` stay, `colo logs` says why there is nothing); a running job's never does.
TEST(ColodE2E, AFinishedJobsFilesGoAfterKeepLogsDaysAndARunningOnesStay) {
  TempDir dir;
  std::ofstream(dir.path() + "/colod.toml") << "[jobs]\nkeep_logs_days = 0.00002\n";  // 1.7 s
  ColodProcess d(dir.path(), "1x40GiB", {"--config", dir.path() + "/colod.toml"});
  const std::string gate = dir.path() + "/gate";
  const std::uint64_t running = d.submit({"--mem", "1GiB", "--", "/bin/sh", "-c", "echo up; " + fifo_gate(gate)});
  // Its first line in its log: it runs, and its stdout.log exists.
  ASSERT_TRUE(wait_until([&] { return d.colo({"logs", std::to_string(running)}).out == "up\n"; }, 60s));
  const std::uint64_t id = d.submit({"--mem", "1GiB", "--", "/bin/echo", "hello"});
  ASSERT_EQ(d.wait_terminal(id, 60s).at("state"), "done");
  const std::string finished_dir = dir.path() + "/jobs/" + std::to_string(id);
  ASSERT_TRUE(wait_until([&] { return !std::filesystem::exists(finished_dir); }, 60s)) << finished_dir;
  const RunResult logs = d.colo({"logs", std::to_string(id)});
  EXPECT_NE(logs.rc, 0);
  EXPECT_EQ(logs.err, "colo: error: job " + std::to_string(id) +
                          ": its logs were removed: it ended more than 2e-05 days ago (jobs.keep_logs_days)\n");
  const nlohmann::json shown = d.colo_json({"show", std::to_string(id), "--json"});
  EXPECT_EQ(shown.at("state"), "done");
  EXPECT_EQ(shown.at("files_removed"), "its logs were removed: it ended more than 2e-05 days ago (jobs.keep_logs_days)");
  // The text names no log paths that are gone.
  const std::string text = d.colo({"show", std::to_string(id)}).out;
  EXPECT_NE(text.find("  logs       none: its logs were removed: it ended more than 2e-05 days ago"), std::string::npos) << text;
  EXPECT_EQ(text.find(finished_dir), std::string::npos) << text;
  EXPECT_TRUE(d.colo_json({"show", std::to_string(running), "--json"}).at("files_removed").is_null());
  // Said from the job's record, whatever the configuration is now.
  d.stop();
  std::ofstream(dir.path() + "/colod.toml") << "[jobs]\nkeep_logs_days = 0\n";
  d.start();
  EXPECT_EQ(d.colo({"logs", std::to_string(id)}).err, logs.err);
  // Running longer than keep_logs_days by now: its files are all there.
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/jobs/" + std::to_string(running) + "/stdout.log"));
  open_gate(gate);
  EXPECT_EQ(d.wait_terminal(running, 60s).at("state"), "done");
}

// A job directory removed by hand (not by jobs.keep_logs_days): `colo logs` says the log is
// missing instead of printing nothing as if the job had been silent; a silent job prints nothing.
TEST(ColodE2E, LogsOfAJobWhoseDirectoryWasRemovedByHandAreAnErrorNotEmpty) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  const std::uint64_t silent = d.submit({"--mem", "1GiB", "--", "/bin/true"});
  const std::uint64_t id = d.submit({"--mem", "1GiB", "--", "/bin/echo", "hello"});
  ASSERT_EQ(d.wait_terminal(silent, 60s).at("state"), "done");
  ASSERT_EQ(d.wait_terminal(id, 60s).at("state"), "done");
  const RunResult quiet = d.colo({"logs", std::to_string(silent)});
  EXPECT_EQ(quiet.rc, 0) << quiet.err;
  EXPECT_EQ(quiet.out, "");
  ASSERT_EQ(d.colo({"logs", std::to_string(id)}).out, "hello\n");
  const std::string job_dir = dir.path() + "/jobs/" + std::to_string(id);
  std::filesystem::remove_all(job_dir);
  for (const char* stream : {"stdout", "stderr"}) {
    std::vector<std::string> args{"logs", std::to_string(id)};
    if (std::string(stream) == "stderr") args.push_back("--stderr");
    const RunResult r = d.colo(args);
    EXPECT_NE(r.rc, 0) << stream;
    EXPECT_EQ(r.out, "") << stream;
    EXPECT_EQ(r.err, fmt::format("colo: error: job {}: its {} log {}/{}.log is missing: removed outside colod, or never "
                                 "created (see colo show {})\n",
                                 id, stream, job_dir, stream, id));
  }
}

// `colo logs -f` follows a job through a colod restart: it says on stderr that it waits, and goes
// on from where it was once colod answers again (each step synchronised on what it printed).
TEST(ColodE2E, LogsFollowOutlivesAColodRestart) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  const std::string gate = dir.path() + "/gate";
  const std::uint64_t id =
      d.submit({"--mem", "1GiB", "--", "/bin/sh", "-c", "echo before; " + fifo_gate(gate) + "; echo after"});
  // A colod that never answered (a wrong socket) is an error at once, not a wait.
  const RunResult wrong = run_process({binary("colo"), "--socket", dir.path() + "/none.sock", "logs", "-f", std::to_string(id)});
  EXPECT_EQ(wrong.rc, 2);
  EXPECT_NE(wrong.err.find("cannot reach colod at " + dir.path() + "/none.sock"), std::string::npos) << wrong.err;
  const std::string out = dir.path() + "/follow.out", err = dir.path() + "/follow.err";
  const std::vector<std::string> argv{binary("colo"), "--socket", d.socket(), "logs", "-f", std::to_string(id)};
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t follower = ::fork();
  ASSERT_GE(follower, 0);
  if (follower == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = -1;
  auto exited = [&] { return ::waitpid(follower, &status, WNOHANG) == follower; };
  ASSERT_TRUE(wait_until([&] { return read_file(out) == "before\n"; }, 60s)) << read_file(err);
  d.stop();
  ASSERT_TRUE(wait_until([&] { return read_file(err).find("waiting for colod to answer again") != std::string::npos; }, 60s))
      << read_file(err);
  d.start();
  open_gate(gate);
  const bool ended = wait_until(exited, 60s);
  if (!ended) {
    ::kill(follower, SIGKILL);
    ::waitpid(follower, &status, 0);
  }
  ASSERT_TRUE(ended) << read_file(err);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << " " << read_file(err);
  EXPECT_EQ(read_file(out), "before\nafter\n");
  EXPECT_NE(read_file(err).find("colod answers again; following on"), std::string::npos) << read_file(err);
  EXPECT_EQ(d.wait_terminal(id, 60s).at("state"), "done");
}

// A directory that cannot be removed (here a mount point inside it: EBUSY) is said once and tried
// again on later passes, not only after colod restarts; once it can go, it goes and is recorded.
TEST(ColodE2E, AnExpiredJobsDirectoryThatCannotBeRemovedIsTriedAgain) {
  TempDir dir;
  const std::string conf = dir.path() + "/colod.toml";
  std::ofstream(conf) << "[jobs]\nkeep_logs_days = 0\n";
  ColodProcess d(dir.path(), "1x40GiB", {"--config", conf});
  const std::uint64_t id = d.submit({"--mem", "1GiB", "--", "/bin/echo", "hello"});
  ASSERT_EQ(d.wait_terminal(id, 60s).at("state"), "done");
  const std::string job_dir = dir.path() + "/jobs/" + std::to_string(id);
  const std::string held = job_dir + "/held";
  MountedTmpfs tmpfs(held, "1m");
  if (!tmpfs.mounted()) GTEST_SKIP() << tmpfs.error();
  std::ofstream(held + "/file") << "x";

  d.stop();
  std::ofstream(conf) << "[jobs]\nkeep_logs_days = 0.00002\n";  // 1.7 s: expired at once
  d.start();
  const std::string said = "colod: job " + std::to_string(id) + ": cannot remove its files after jobs.keep_logs_days: ";
  ASSERT_TRUE(wait_until([&] { return d.log().find(said) != std::string::npos; }, 60s)) << d.log();
  EXPECT_NE(d.log().find("; tried again on every pass (at most a minute apart)"), std::string::npos) << d.log();
  EXPECT_TRUE(std::filesystem::exists(held));
  EXPECT_EQ(d.colo({"logs", std::to_string(id)}).err.find("its logs were removed"), std::string::npos);

  ASSERT_EQ(tmpfs.unmount(), "");
  ASSERT_TRUE(wait_until([&] { return !std::filesystem::exists(job_dir); }, 60s)) << d.log();
  ASSERT_TRUE(wait_until([&] { return d.log().find("its files are removed now") != std::string::npos; }, 60s));
  EXPECT_EQ(d.colo({"logs", std::to_string(id)}).err,
            "colo: error: job " + std::to_string(id) +
                ": its logs were removed: it ended more than 2e-05 days ago (jobs.keep_logs_days)\n");
  // Said once, not on every pass.
  const std::string log = d.log();
  EXPECT_EQ(log.find(said), log.rfind(said)) << log;
}

// A job whose own output fills the disk of its directory still ends with its exit status: the
// shim reserved exit.json's room before starting it. Before, exit.json could not be written, the
// attempt was "lost" and the job, which had run to exit 0, was queued to run again.
TEST(ColodE2E, AJobThatFillsItsDisksEndsOnceWithItsExitStatus) {
  TempDir dir;
  MountedTmpfs jobs(dir.path() + "/jobs", "2m");
  if (!jobs.mounted()) GTEST_SKIP() << jobs.error();
  const std::string conf = dir.path() + "/colod.toml";
  std::ofstream(conf) << "[jobs]\nmax_log = 0\n";  // no cap: the output fills the 2 MiB
  {
    ColodProcess d(dir.path(), "1x40GiB", {"--config", conf});
    const std::uint64_t id = d.submit({"--mem", "1GiB", "--", "/bin/sh", "-c", "seq 1 1000000; echo END"});
    const json j = d.wait_terminal(id, 120s);
    EXPECT_EQ(j.at("state"), "done") << j.dump(2);
    ASSERT_EQ(j.at("attempts").size(), 1u) << j.dump(2);
    EXPECT_EQ(j.at("attempts")[0].at("exit_code"), 0) << j.dump(2);
    d.stop();
  }
}

// colod with its state directory on a 16 MiB tmpfs and one job running, held at a gate (it exits
// 3 once let go); each test fills the disk.
class ColodFullStateDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    disk = std::make_unique<MountedTmpfs>(state, "16m");
    if (!disk->mounted()) GTEST_SKIP() << disk->error();
    d = std::make_unique<ColodProcess>(state, "1x40GiB", std::vector<std::string>{}, dir.path() + "/colod.log");
    id = d->submit({"--mem", "1GiB", "--", "/bin/sh", "-c", fifo_gate(gate) + "; exit 3"});
    ASSERT_TRUE(wait_until([&] { return show_job(*d, id).at("state") == "running"; }, 60s));
  }
  // Once, with its exit status.
  void expect_the_job_ended_once() {
    const json j = d->wait_terminal(id, 60s);
    EXPECT_EQ(j.at("state"), "failed") << j.dump(2);
    ASSERT_EQ(j.at("attempts").size(), 1u) << j.dump(2);
    EXPECT_EQ(j.at("attempts")[0].at("exit_code"), 3) << j.dump(2);
  }

  TempDir dir;
  const std::string state = dir.path() + "/state", gate = dir.path() + "/gate", filler = state + "/filler";
  std::unique_ptr<MountedTmpfs> disk;
  std::unique_ptr<ColodProcess> d;  // stopped before the disk goes
  std::uint64_t id = 0;
};

// A submission is refused (507, nothing recorded), colod keeps answering, and the job still ends.
TEST_F(ColodFullStateDisk, RefusesSubmissionsAndLosesNoJob) {
  ASSERT_GT(fill_disk(filler), 0u);
  const RunResult refused = d->colo({"submit", "--mem", "1GiB", "--", "/bin/true"});
  EXPECT_NE(refused.rc, 0);
  EXPECT_EQ(refused.out, "");
  EXPECT_NE(refused.err.find("colod cannot record it: the disk of its state directory " + state + " is full (sqlite: "),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("nothing was changed, try again once there is room"), std::string::npos) << refused.err;
  EXPECT_EQ(json::parse(d->colo({"queue", "--all", "--json"}).out).size(), 1u);
  // Its monitoring goes unrecorded meanwhile (said once), and it goes on.
  ASSERT_TRUE(wait_until([&] { return d->log().find("colod: GPU samples not recorded while the state disk is full: sqlite: ") !=
                                      std::string::npos; },
                         60s))
      << d->log();
  ASSERT_TRUE(d->alive()) << d->log();
  EXPECT_EQ(show_job(*d, id).at("state"), "running");

  std::filesystem::remove(filler);
  ASSERT_TRUE(wait_until([&] { return d->log().find("colod: GPU samples recorded again") != std::string::npos; }, 60s))
      << d->log();
  const std::string log = d->log();
  EXPECT_EQ(log.find("GPU samples not recorded"), log.rfind("GPU samples not recorded")) << log;
  open_gate(gate);
  expect_the_job_ended_once();
  const std::uint64_t next = d->submit({"--mem", "1GiB", "--", "/bin/true"});
  EXPECT_EQ(d->wait_terminal(next, 60s).at("state"), "done");
  EXPECT_EQ(json::parse(d->colo({"queue", "--all", "--json"}).out).size(), 2u);
}

// colod (re)started on the full disk (systemd restarts it) cannot open its database for writing:
// it says why and stops, leaving the running job to its shim. Started again once there is room,
// it records how the job ended meanwhile.
TEST_F(ColodFullStateDisk, ColodStartedOnItSaysWhyAndLosesNoJob) {
  d->stop();  // a clean stop folds the write-ahead log into the database and removes it
  ASSERT_GT(fill_disk(filler), 0u);
  open_gate(gate);  // the job ends while no colod runs; its shim writes exit.json into reserved room
  const std::string exit_json = state + "/jobs/" + std::to_string(id) + "/attempt-1/exit.json";
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(exit_json); }, 60s));
  fill_disk(filler);  // what the exit record's room did not need is free again: fill that too

  ASSERT_FALSE(d->start(/*may_exit=*/true)) << d->log();
  EXPECT_NE(d->log().find("colod: error: its state database cannot be written, the disk is full (sqlite: "),
            std::string::npos)
      << d->log();
  EXPECT_NE(d->log().find("running jobs go on under their shims: start colod again once there is room"),
            std::string::npos);
  d->stop();  // reaps it

  std::filesystem::remove(filler);
  d->start();
  expect_the_job_ended_once();
}

TEST(ColodE2E, UsersCannotTouchEachOthersJobs) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to act as a second user";
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  const uid_t nobody = 65534;
  const std::uint64_t root_job = d.submit({"--mem", "1GiB", "--", "/bin/sleep", "30"});
  const std::string rid = std::to_string(root_job);
  RunResult show = d.colo({"show", rid}, nobody);
  EXPECT_EQ(show.rc, 2);
  EXPECT_NE(show.err.find("job " + rid + " not found"), std::string::npos) << show.err;
  EXPECT_EQ(d.colo({"cancel", rid}, nobody).rc, 2);
  EXPECT_EQ(d.colo({"logs", rid}, nobody).rc, 2);
  RunResult drain = d.colo({"drain", "0"}, nobody);
  EXPECT_EQ(drain.rc, 2);
  EXPECT_NE(drain.err.find("only root"), std::string::npos) << drain.err;
  RunResult q = d.colo({"queue", "--json"}, nobody);
  ASSERT_EQ(q.rc, 0) << q.err;
  EXPECT_EQ(json::parse(q.out).size(), 0u);
  EXPECT_NE(d.colo_json({"show", rid, "--json"}).at("state"), "cancelled");

  // nobody's own job: visible to nobody and to root, runs as nobody.
  RunResult sub = d.colo({"submit", "--workdir", "/", "--mem", "1GiB", "--", "/usr/bin/id", "-u"}, nobody);
  ASSERT_EQ(sub.rc, 0) << sub.err;
  const std::string nid = std::to_string(std::stoull(sub.out));
  const json nj = d.wait_terminal(std::stoull(sub.out));
  EXPECT_EQ(nj.at("user"), "nobody");
  EXPECT_EQ(nj.at("state"), "done") << nj.dump(2);
  EXPECT_EQ(d.colo({"logs", nid}, nobody).out, "65534\n");
  // Its stdout and stderr (the shim's pipes) are its own: it can open them again by name.
  RunResult by_name = d.colo({"submit", "--workdir", "/", "--mem", "1GiB", "--", "/bin/sh", "-c",
                              "echo a > /dev/stdout && echo b | tee /dev/stderr > /dev/null"},
                             nobody);
  ASSERT_EQ(by_name.rc, 0) << by_name.err;
  const std::string bid = std::to_string(std::stoull(by_name.out));
  EXPECT_EQ(d.wait_terminal(std::stoull(by_name.out)).at("state"), "done");
  EXPECT_EQ(d.colo({"logs", bid}, nobody).out, "a\n");
  EXPECT_EQ(d.colo({"logs", bid, "--stderr"}, nobody).out, "b\n");
  EXPECT_EQ(json::parse(d.colo({"queue", "--all", "--json"}, nobody).out).size(), 2u);
  EXPECT_EQ(d.colo_json({"queue", "--all", "--json"}).size(), 3u);  // root sees all
  d.colo({"cancel", rid});
  d.wait_terminal(root_job, 30s);
}

// Raw bytes to the socket; returns the whole answer.
std::string raw_request(const std::string& sock, const std::string& bytes) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, sock.c_str(), sizeof(addr.sun_path) - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

// A job's output comes back byte for byte (`colo logs`: base64 on the wire), and text chunks
// never split a UTF-8 character.
TEST(ColodE2E, LogsAreExactBytesAndTextChunksKeepCharactersWhole) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  const std::uint64_t id = d.submit({"--", "/bin/sh", "-c", "printf 'a\\377b\\303\\251\\n'"});
  ASSERT_EQ(d.wait_terminal(id, 30s).at("state"), "done");
  EXPECT_EQ(d.colo({"logs", std::to_string(id)}).out, std::string("a\xff" "b\xc3\xa9\n"));
  const std::string base = "GET /v1/jobs/" + std::to_string(id) + "/logs?";
  auto body_of = [&](const std::string& query) {
    const std::string resp = raw_request(d.socket(), base + query + " HTTP/1.1\r\n\r\n");
    return json::parse(resp.substr(resp.find("\r\n\r\n") + 4));
  };
  // "é" is bytes 3..4: a 4-byte chunk stops before it, the next one starts at its lead byte.
  const json first = body_of("offset=0&max=4");
  EXPECT_EQ(first.at("offset"), 3) << first.dump();
  const json second = body_of("offset=3&max=4");
  EXPECT_EQ(second.at("data"), "\xc3\xa9\n") << second.dump();
  EXPECT_EQ(body_of("encoding=base64").at("data"), "Yf9iw6kK");
  EXPECT_EQ(body_of("encoding=hex").at("error").get<std::string>(), "query 'encoding' must be text or base64");
}

TEST(ColodE2E, MalformedRequestsGetClearErrorsAndTheDaemonStaysUp) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  const std::string s = d.socket();
  struct Case {
    std::string bytes, status, message;
  };
  const std::vector<Case> cases = {
      {http_post("/v1/jobs", "{not json"), "400", "not valid JSON"},
      {http_post("/v1/jobs", R"({"argv": "sleep 1"})"), "400", "field 'argv'"},
      {http_post("/v1/jobs", R"({"argv": ["x"], "gpus": "two"})"), "400", "field 'gpus'"},
      {http_post("/v1/jobs", R"({"argv": ["x"], "gpus": 0})"), "400", "field 'gpus'"},
      {http_post("/v1/jobs", R"({"argv": ["x"], "mem_mib": -5})"), "400", "field 'mem_mib'"},
      {http_post("/v1/jobs", R"({"argv": ["x"], "env": {"CUDA_VISIBLE_DEVICES": "0"}})"), "400", "set by colo"},
      {http_post("/v1/jobs", R"({"argv": ["x"], "surprise": 1})"), "400", "unknown field 'surprise'"},
      {http_post("/v1/jobs", R"([1,2,3])"), "400", "expected a JSON object"},
      {"POST /v1/jobs HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n", "413", "exceeds the limit"},
      {"POST /v1/jobs HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "501", "Transfer-Encoding"},
      {"GET /v1/nothing HTTP/1.1\r\n\r\n", "404", "unknown route"},
      {"DELETE /v1/jobs HTTP/1.1\r\n\r\n", "405", "not allowed"},
      {"GET /v1/jobs/abc HTTP/1.1\r\n\r\n", "400", "not a job id"},
      {"GARBAGE\r\n\r\n", "400", "malformed request line"},
      {"GET / HTTP/2.0\r\n\r\n", "505", "unsupported HTTP version"},
      {"GET /v1/jobs HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n", "431", "exceeds"},
      {"GET /v1/jobs/1/logs?offset=-3 HTTP/1.1\r\n\r\n", "404", "not found"},
      {"GET /v1/jobs?all=banana HTTP/1.1\r\n\r\n", "400", "query 'all' must be 0, 1, true or false"},
      {"GET /v1/jobs?al=1 HTTP/1.1\r\n\r\n", "400", "unknown query parameter 'al'"},
      {"GET /v1/jobs?all=1&all=0 HTTP/1.1\r\n\r\n", "400", "given twice"},
      {"GET /v1/status?x=1 HTTP/1.1\r\n\r\n", "400", "unknown query parameter 'x'"},
      {http_post("/v1/jobs", std::string(R"({"argv":["true"]})") + '\0' + " junk"), "400", "NUL byte"},
  };
  for (const Case& c : cases) {
    const std::string resp = raw_request(s, c.bytes);
    EXPECT_EQ(resp.substr(0, 12), "HTTP/1.1 " + c.status) << c.bytes.substr(0, 80) << " -> " << resp;
    EXPECT_NE(resp.find(c.message), std::string::npos) << c.bytes.substr(0, 80) << " -> " << resp;
    const size_t body = resp.find("\r\n\r\n");
    ASSERT_NE(body, std::string::npos);
    const json e = json::parse(resp.substr(body + 4));
    EXPECT_EQ(e.at("error").get<std::string>().find('\n'), std::string::npos);  // one line
  }
  // A huge body that is actually sent is refused without reading it all.
  const std::string huge = http_post("/v1/jobs", std::string(3 << 20, 'x'));
  EXPECT_EQ(raw_request(s, huge).substr(0, 12), "HTTP/1.1 413");
  // A client that connects and sends nothing does not block others.
  const int idle = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, s.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(connect(idle, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(d.colo({"queue"}).rc, 0);
  close(idle);
  EXPECT_TRUE(d.alive());
  EXPECT_EQ(d.submit({"--", "/bin/true"}), 1u);  // nothing above created a job
}

TEST(ColodE2E, MalformedJobFilesGetOneLineErrors) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir.path() + "/" + name) << text;
    return dir.path() + "/" + name;
  };
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--rad", write("short.rad", "# c\nconda activate tf\npython x.py\nm.model\n")}, "short.rad:5: missing field 'dataset'"},
      {{"--rad", write("badbatch.rad", "conda\npython x.py\nm.model\nds\nthirty-two\nexclusive\n1\n")}, "badbatch.rad:5: batch size: 'thirty-two' is not an integer"},
      {{"--rad", write("badmode.rad", "conda\npython x.py\nm.model\nds\n32\nsometimes\n1\n")}, "badmode.rad:6: placement mode"},
      {{"--rad", write("badmem.rad", "conda\npython x.py\nm.model\nds\n32\nexclusive\n1\n12x\n")}, "badmem.rad:8: measured memory"},
      {{"--rad", dir.path() + "/missing.rad"}, "missing.rad: cannot open"},
      {{write("syntax.toml", "name = \"a\"\ncommand = [\"x\"\n")}, "syntax.toml:"},
      {{write("types.toml", "command = [\"x\"]\ngpus = \"two\"\n")}, "types.toml:2: 'gpus' must be an integer"},
      {{write("unknown.toml", "command = [\"x\"]\ngpu = 1\n")}, "unknown.toml:2: unknown key 'gpu'"},
      {{write("nocmd.toml", "name = \"x\"\n")}, "nocmd.toml:1: missing 'command'"},
      {{write("mem.toml", "command = \"x\"\nmem = \"12 parsecs\"\n")}, "mem.toml:2: memory '12 parsecs'"},
      {{"--mem", "lots", "--", "/bin/true"}, "memory 'lots'"},
      {{"--env", "1BAD=x", "--", "/bin/true"}, "environment variable name '1BAD'"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args{"submit"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    RunResult r = d.colo(args);
    EXPECT_EQ(r.rc, 2) << c.message << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << "want '" << c.message << "' in: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // The prototype's real .rad files parse, and one runs (its command replaced by a fake job).
  const std::string rad = std::string(COLO_SOURCE_DIR) + "/data/carma/rad/resnet.rad";
  const std::uint64_t id = d.submit({"--rad", rad, "--", fake_job(), "--mem", "5GiB", "--hold", "0.5"});
  const json j = d.wait_terminal(id);
  EXPECT_EQ(j.at("state"), "done") << j.dump(2);
  EXPECT_EQ(j.at("need_mib"), 5262);
  EXPECT_EQ(j.at("need_source"), "rad:measured");
  EXPECT_EQ(j.at("name"), "resnet");
  // A TOML job file.
  const std::string toml = write("job.toml", "name = \"tomljob\"\ncommand = \"echo $GREETING\"\nmem = \"2GiB\"\n[env]\nGREETING = \"hi\"\n");
  const std::uint64_t tid = d.submit({toml});
  EXPECT_EQ(d.wait_terminal(tid).at("state"), "done");
  EXPECT_EQ(d.colo({"logs", std::to_string(tid)}).out, "hi\n");
  EXPECT_TRUE(d.alive());
}

}  // namespace
}  // namespace colo::daemon::testing
