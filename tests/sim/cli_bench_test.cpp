// `colo bench collocation` end to end on the fake NVML: real processes (colo-fake-job reporting
// progress), solo and pair runs, the MPS control daemon (a recording stand-in), MIG instances,
// the fitted model file read back by the simulator, and the one-line errors. Assertions are on
// what the runs recorded, never on how fast anything ran.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "gpu/fake_nvml_env.h"
#include "sim/models/sim_model.h"

namespace colo::sim::test {
namespace {

using ::testing::HasSubstr;

const std::string kFakeJob = std::string(COLO_BINARY_DIR) + "/colo-fake-job";

class CliBench : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("colo-bench-test-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));  // two runs of the suite at once must not share it
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string job(const std::string& name, double smact, double rate) {
    return "--job '" + name + "=" + kFakeJob + " --mem 1GiB --hold inf --sm-activity " + std::to_string(smact) +
           " --progress-rate " + std::to_string(rate) + "'";
  }
  CliRun bench(const std::string& args) {
    return run_colo_args("bench collocation --fake-gpus '1x40GiB+1x80GiB:mig=3g.40gb,4g.40gb' --warmup-s 0 "
                         "--measure-s 0.5 --idle-s 0.3 --work-dir " + path("work") + " " + args);
  }
  static std::string shell(const std::string& cmd) {
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      char buf[256];
      while (fgets(buf, sizeof buf, p)) out += buf;
      pclose(p);
    }
    return out;
  }
  static std::string read(const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::filesystem::path dir_;
};

TEST_F(CliBench, StreamsPairsAreMeasuredFittedAndWrittenAsAModelTheSimulatorReads) {
  // Power from the fake board's readings, not its energy counter: the counter's mean rests on
  // when the harness stamps its samples, which a loaded machine skews (cli/power_meter.h is
  // tested with given timestamps in tests/cli/power_meter_test.cpp).
  std::filesystem::create_directories(path("work") + "/fake-nvml");
  gpu::add_fake_call_failure(path("work") + "/fake-nvml", 0, "nvmlDeviceGetTotalEnergyConsumption", 3);
  const auto r = bench("--sharing streams " + job("small", 0.3, 100) + " " + job("large", 0.6, 40) + " --out " +
                       path("m.toml") + " --measurements " + path("m.json"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("streams.slice_wait = "));
  const SimModel m = load_sim_model(path("m.toml"));
  EXPECT_THAT(m.sources.at("streams.slice_wait"),
              HasSubstr("colo bench collocation, streams on Fake NVIDIA GPU 40GiB (GPU-"));
  EXPECT_THAT(m.sources.at("streams.switch_overhead"), HasSubstr("1 pair(s) of jobs small, large, 2 slowdowns"));
  EXPECT_THAT(m.sources.at("mps.interference"), HasSubstr("thesis Table 4.2"));  // not measured: kept
  const auto j = nlohmann::json::parse(read(path("m.json")));
  EXPECT_EQ(j["format"], "colo-bench-collocation 1");
  ASSERT_EQ(j["solo"].size(), 2u);
  EXPECT_EQ(j["solo"][0]["job"], "small");
  EXPECT_NEAR(j["solo"][0]["smact"].get<double>(), 0.3, 1e-6);  // what the fake GPU reported for it
  EXPECT_NEAR(j["solo"][1]["smact"].get<double>(), 0.6, 1e-6);
  ASSERT_EQ(j["pairs"].size(), 1u);
  for (const auto& t : j["pairs"][0]["throughput"]) EXPECT_GT(t.get<double>(), 0);
  EXPECT_EQ(j["fitted"]["streams.slice_wait"]["value"].get<double>(), m.streams.slice_wait);
  // The power model from the fake board (60 W + 340 W × SMACT): idle read with no job, the slope
  // from the solo runs (SMACT 0.3, 0.6), the floor from the pair (0.9).
  EXPECT_NEAR(j["idle"]["watts"].get<double>(), 60, 0.01);
  EXPECT_EQ(j["idle"]["processes"], 0);
  EXPECT_NEAR(j["solo"][0]["watts"].get<double>(), 60 + 340 * 0.3, 0.01);
  EXPECT_NEAR(j["pairs"][0]["watts"].get<double>(), 60 + 340 * 0.9, 0.01);
  EXPECT_NEAR(m.power.idle_watts, 60, 0.01);
  // The fit from what was recorded (the rates are measured, so they are only ≈ 1 here): the floor
  // from the pair, P − Σ P_j r_j = B (1 − Σ r), raised to the idle level; the slope from the
  // solo runs through (SMACT, P − B).
  const auto& pair = j["pairs"][0];
  const double p0 = j["solo"][0]["watts"], p1 = j["solo"][1]["watts"];
  const double r0 = 1 / pair["slowdown"][0].get<double>(), r1 = 1 / pair["slowdown"][1].get<double>();
  const double floor = std::max(j["idle"]["watts"].get<double>(),
                                (pair["watts"].get<double>() - p0 * r0 - p1 * r1) / (1 - r0 - r1));
  EXPECT_NEAR(m.power.busy_watts, floor, 1e-6);
  const double s0 = j["solo"][0]["smact"], s1 = j["solo"][1]["smact"];
  EXPECT_NEAR(m.power.max_watts, floor + (s0 * (p0 - floor) + s1 * (p1 - floor)) / (s0 * s0 + s1 * s1), 1e-6);
  EXPECT_THAT(m.sources.at("power.busy_watts"), HasSubstr("adds up to the power of 1 shared window(s) of jobs small, large"));
  EXPECT_THAT(m.sources.at("power.max_watts"), HasSubstr("the watts per unit of SMACT of 2 job(s) alone (small, large; least squares)"));
  EXPECT_THAT(m.sources.at("power.idle_watts"), HasSubstr("board power over 0.3 s with no job"));
  // The simulator runs on it.
  const auto s = run_colo_args("sim --model " + path("m.toml") + " --sharing streams --json");
  ASSERT_EQ(s.status, 0) << s.out;
  EXPECT_EQ(nlohmann::json::parse(s.out)["completed"], 90);
}

TEST_F(CliBench, MpsPairsRunThroughOneMpsControlDaemon) {
  const auto r = bench("--sharing mps --mps-control " + std::string(COLO_SOURCE_DIR) + "/tests/gpu/fake_mps_control.sh " +
                       job("a", 0.3, 100) + " " + job("b", 0.5, 50) + " " + job("c", 0.2, 80) + " --out " + path("m.toml"));
  ASSERT_EQ(r.status, 0) << r.out;
  const SimModel m = load_sim_model(path("m.toml"));
  EXPECT_THAT(m.sources.at("mps.interference"), HasSubstr("3 pair(s) of jobs a, b, c, 6 slowdowns"));
  // Started once for the pairs (not for the solo runs), quit at the end.
  std::string calls;
  for (const auto& e : std::filesystem::recursive_directory_iterator(path("work") + "/mps"))
    if (e.path().filename() == "calls") calls += read(e.path().string());
  EXPECT_THAT(calls, HasSubstr("start -d CUDA_VISIBLE_DEVICES=GPU-"));
  EXPECT_THAT(calls, HasSubstr("command quit"));
  EXPECT_EQ(calls.find("start -d"), calls.rfind("start -d"));
}

TEST_F(CliBench, MigRunsEachJobAloneOnEachInstance) {
  auto r = bench("--sharing mig --mig-instance MIG-none " + job("a", 0.3, 100) + " --out " + path("m.toml"));
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.out, HasSubstr("--mig-instance MIG-none: no such MIG instance; there are: MIG-"));
  const std::string uuid = r.out.substr(r.out.find("there are: ") + 11, r.out.find(" (Fake") - r.out.find("there are: ") - 11);
  r = bench("--sharing mig --mig-instance " + uuid + " " + job("a", 0.3, 100) + " --out " + path("m.toml") +
            " --measurements " + path("m.json"));
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(read(path("m.json")));
  ASSERT_EQ(j["mig"].size(), 1u);
  EXPECT_EQ(j["mig"][0]["compute_slices"], 3);
  EXPECT_EQ(j["mig"][0]["instance"], uuid);
  load_sim_model(path("m.toml"));  // written whatever was fitted
}

// A board without power readings: the run still fits the sharing model, says in one line why the
// power model was not fitted, and writes the base model's power unchanged.
TEST_F(CliBench, NoPowerReadingsLeaveThePowerModelAsItWasAndSaySo) {
  std::filesystem::create_directories(path("work") + "/fake-nvml");
  for (const char* call : {"nvmlDeviceGetTotalEnergyConsumption", "nvmlDeviceGetPowerUsage"})
    gpu::add_fake_call_failure(path("work") + "/fake-nvml", 0, call, 3);
  const auto r = bench("--sharing streams " + job("a", 0.3, 100) + " " + job("b", 0.6, 40) + " --out " + path("m.toml") +
                       " --measurements " + path("m.json"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("bench: power model not fitted: no GPU power readings (nvmlDeviceGetTotalEnergyConsumption "
                               "and nvmlDeviceGetPowerUsage gave none)\n"));
  const SimModel m = load_sim_model(path("m.toml"));
  const SimModel base = load_sim_model(default_sim_model_path());
  EXPECT_EQ(m.power.idle_watts, base.power.idle_watts);
  EXPECT_EQ(m.power.busy_watts, base.power.busy_watts);
  EXPECT_EQ(m.power.max_watts, base.power.max_watts);
  EXPECT_EQ(m.sources.at("power.max_watts"), base.sources.at("power.max_watts"));
  const auto j = nlohmann::json::parse(read(path("m.json")));
  EXPECT_TRUE(j["idle"]["watts"].is_null());
  EXPECT_FALSE(j["fitted"].contains("power.busy_watts"));
}

// A GPU in MIG mode has no whole GPU to run the baseline on: the solo runs of an earlier
// measurement (same jobs, same GPU model) stand in, checked job by job.
TEST_F(CliBench, MigCanReuseTheSoloRunsOfAnEarlierMeasurement) {
  const std::string spec = "--fake-gpus '1x80GiB+1x80GiB:mig=3g.40gb,4g.40gb' --warmup-s 0 --measure-s 0.5 --idle-s 0.3 ";
  auto r = run_colo_args("bench collocation " + spec + "--work-dir " + path("w1") + " --sharing streams " +
                         job("a", 0.3, 100) + " " + job("b", 0.5, 60) + " --out " + path("s.toml") +
                         " --measurements " + path("s.json"));
  ASSERT_EQ(r.status, 0) << r.out;
  r = bench("--sharing mig --mig-instance MIG-none " + job("a", 0.3, 100) + " --out " + path("m.toml"));
  const std::string uuid = r.out.substr(r.out.find("there are: ") + 11, r.out.find(" (Fake") - r.out.find("there are: ") - 11);
  r = run_colo_args("bench collocation " + spec + "--work-dir " + path("w2") + " --gpu 1 --sharing mig --mig-instance " +
                    uuid + " --solo-from " + path("s.json") + " " + job("a", 0.3, 100) + " --out " + path("m.toml") +
                    " --measurements " + path("m.json"));
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(read(path("m.json")));
  EXPECT_EQ(j["solo_from"], path("s.json"));
  ASSERT_EQ(j["mig"].size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(path("w2") + "/solo-a.log"));  // not run again
  EXPECT_TRUE(std::filesystem::exists(path("w2") + "/mig3-a.log"));
  // Another command under the same name, or a GPU of another model, is no baseline.
  r = run_colo_args("bench collocation " + spec + "--work-dir " + path("w3") + " --gpu 1 --sharing mig --mig-instance " +
                    uuid + " --solo-from " + path("s.json") + " " + job("a", 0.3, 99) + " --out " + path("m.toml"));
  EXPECT_THAT(r.out, HasSubstr("--solo-from " + path("s.json") + ": job a ran another command there"));
  r = bench("--sharing streams --solo-from " + path("s.json") + " " + job("a", 0.3, 100) + " " + job("b", 0.5, 60) +
            " --out " + path("m.toml"));
  EXPECT_THAT(r.out, HasSubstr("--solo-from " + path("s.json") + ": measured on Fake NVIDIA GPU 80GiB, this GPU is "
                               "Fake NVIDIA GPU 40GiB"));
  r = bench("--sharing streams --solo-from " + path("nope.json") + " " + job("a", 0.3, 100) + " " + job("b", 0.5, 60) +
            " --out " + path("m.toml"));
  EXPECT_THAT(r.out, HasSubstr("--solo-from " + path("nope.json") + ": not a file"));
}

// A hand-edited or damaged --solo-from file is refused by job and field before any run (a busy
// share of 5 silently dropped pairs from the fit after they had run); --smact given for a job
// is what the measurements file records, as the fit used it.
TEST_F(CliBench, SoloFromValuesAreCheckedBeforeAnyRunAndRecordedAsUsed) {
  auto command = [](const std::string& name, double smact, double rate) {
    const std::string j = job(name, smact, rate);
    return j.substr(j.find('=') + 1, j.size() - j.find('=') - 2);
  };
  auto solo_file = [&](const nlohmann::json& a_extra) {
    nlohmann::json a = {{"job", "a"}, {"command", command("a", 0.3, 100)}, {"throughput", 100}, {"smact", 0.3}};
    a.update(a_extra);
    const nlohmann::json f = {{"format", "colo-bench-collocation 1"},
                              {"gpu", {{"name", "Fake NVIDIA GPU 40GiB"}}},
                              {"solo", {a, {{"job", "b"}, {"command", command("b", 0.5, 60)}, {"throughput", 60}, {"smact", 0.5}}}}};
    std::ofstream(path("s.json")) << f.dump();
    return "--sharing streams --solo-from " + path("s.json") + " " + job("a", 0.3, 100) + " " + job("b", 0.5, 60) +
           " --out " + path("m.toml") + " --measurements " + path("m.json");
  };
  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {{{"busy", 5}}, "job a: 'busy' is 5, outside [0, 1]"},
      {{{"smact", nullptr}}, "job a: 'smact' must be a number"},
      {{{"watts", -3}}, "job a: 'watts' is -3, outside [0, 10000]"},
      {{{"throughput", 0}}, "job a: 'throughput' must be > 0"},
      {{{"throughput", "fast"}}, "job a: 'throughput' must be a number"},
  };
  for (const auto& [extra, why] : bad) {
    const auto r = bench(solo_file(extra));
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_THAT(r.out, HasSubstr("\ncolo: error: --solo-from " + path("s.json") + ": " + why + "\n")) << extra.dump();
    EXPECT_THAT(r.out, ::testing::Not(HasSubstr("bench: idle"))) << "stopped before the idle window";
    EXPECT_FALSE(std::filesystem::exists(path("work") + "/pair-a.log")) << "no pair ran: " << extra.dump();
  }
  auto r = bench("--sharing mps --solo-from " + dir_.string() + " " + job("a", 0.3, 100) + " " + job("b", 0.5, 60) +
                 " --out " + path("m.toml"));
  EXPECT_THAT(r.out, HasSubstr("\ncolo: error: --solo-from " + dir_.string() + ": not a file\n"));
  // An output path that is a directory: known before the runs, not after them.
  r = bench("--sharing mps " + job("a", 0.3, 100) + " " + job("b", 0.5, 60) + " --out " + dir_.string());
  EXPECT_EQ(r.out, "colo: error: bench collocation: cannot write " + dir_.string() + ": it is a directory\n");
  EXPECT_FALSE(std::filesystem::exists(path("work") + "/solo-a.log"));
  // --smact over the file's value: recorded as used.
  r = bench(solo_file({{"busy", 0.4}}) + " --smact a=0.9");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto m = nlohmann::json::parse(read(path("m.json")));
  EXPECT_DOUBLE_EQ(m["solo"][0]["smact"].get<double>(), 0.9);
  EXPECT_EQ(m["solo"][0]["smact_source"], "--smact");
  EXPECT_TRUE(m["solo"][0]["busy"].is_null()) << "a busy share below the given SMACT is not the job's";
  EXPECT_DOUBLE_EQ(m["solo"][1]["smact"].get<double>(), 0.5);
  // With --smact for a job, the file's SMACT may be missing.
  r = bench(solo_file({{"smact", nullptr}}) + " --smact a=0.3");
  ASSERT_EQ(r.status, 0) << r.out;
}

TEST_F(CliBench, JobsThatEndOrNeverReportAreOneLineErrorsAndNothingIsLeftRunning) {
  auto r = bench("--sharing streams " + job("a", 0.3, 100) + " --job 'b=echo starting; exit 3' --out " + path("m.toml"));
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.out, HasSubstr("bench: job b exited with status 3 after starting (run solo; it must run until "
                               "stopped); its output ends: starting"));
  // Jobs that never end by themselves without a clock: they block opening a FIFO nobody writes.
  const std::string never = path("never-301");
  ASSERT_EQ(::mkfifo(never.c_str(), 0600), 0);
  r = bench("--sharing streams --stall-timeout-s 1 --job 'quiet=read x < " + never + "' " + job("b", 0.3, 10) +
            " --out " + path("m.toml"));
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.out, HasSubstr("bench: job quiet made no progress report within 1 s after starting (run solo;"));
  r = bench("--sharing streams --job 'liar=echo lots > $COLO_BENCH_PROGRESS; read x < " + never + "' " + job("b", 0.3, 10) +
            " --out " + path("m.toml"));
  EXPECT_THAT(r.out, HasSubstr("bench: job liar wrote 'lots' to its progress file"));
  EXPECT_FALSE(std::filesystem::exists(path("m.toml")));
  // The stopped jobs' sessions are gone: nothing of theirs still runs.
  EXPECT_EQ(shell("pgrep -f 'neve[r]-301' || echo none"), "none\n");
  r = bench("--sharing streams " + job("a", 0.3, 100) + " --out " + path("m.toml"));
  EXPECT_THAT(r.out, HasSubstr("give at least 2 --job"));
  std::filesystem::remove_all(path("work"));
  r = bench("--sharing streams " + job("a", 0.3, 100) + " " + job("b", 0.3, 100) + " --out /nonexistent-dir/m.toml");
  EXPECT_THAT(r.out, HasSubstr("cannot write /nonexistent-dir/m.toml: /nonexistent-dir is not a writable directory"));
  EXPECT_FALSE(std::filesystem::exists(path("work") + "/solo-a.log"));  // refused before any run
  r = bench("--sharing mps --job x=true --job y=true --smact z=0.5 --out " + path("m.toml"));
  EXPECT_THAT(r.out, HasSubstr("--smact 'z=0.5': no --job is named z"));
}

// Ctrl-C in the middle of a run: colo stops the run's jobs (sessions of their own, which the
// terminal's signal does not reach) before it exits. Synchronised on the job's progress file.
TEST_F(CliBench, AnInterruptStopsTheRunningJobsFirst) {
  const std::string out = path("colo.out");
  const std::string cmd = std::string(COLO_BINARY_DIR) + "/colo bench collocation --fake-gpus 1x40GiB --sharing streams "
                          "--warmup-s 3600 --work-dir " + path("work") + " " + job("a", 0.3, 123.25) + " " +
                          "--job 'b=read x < " + path("never-302") + "' --out " + path("m.toml") + " > " + out + " 2>&1";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Job a is running (it has reported) and in its hour-long warm-up.
  const std::string progress = path("work") + "/solo-a.progress";
  // Polled on the file itself (bounded by the test's timeout, not by a guess); colo ending first
  // fails the test instead of waiting.
  int status = 0;
  while (!std::filesystem::exists(progress)) {
    ASSERT_EQ(::waitpid(pid, &status, WNOHANG), 0) << "colo ended before its job reported: " << read(out);
    ::sched_yield();
  }
  ::kill(pid, SIGINT);
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0);
  EXPECT_THAT(read(out), HasSubstr("bench: interrupted by signal 2 (run solo); its jobs are stopped"));
  // Nothing of the run is left (the rate is this test's own, so other tests' jobs do not count).
  EXPECT_EQ(shell("pgrep -f 'progress-rate 123[.]25' || echo none"), "none\n");
  EXPECT_EQ(shell("pgrep -f 'neve[r]-302' || echo none"), "none\n");
  EXPECT_FALSE(std::filesystem::exists(path("m.toml")));
}

}  // namespace
}  // namespace colo::sim::test
