// The `colo sim` contract used by the acceptance checks: flags, JSON keys, one-line errors.
// Runs the built binary; skipped when it has not been built in this build tree.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "data_path.h"

namespace colo::sim {
namespace {

using test::CliRun;

CliRun run_colo(const std::string& args) {
  return test::run_colo_args("sim --workloads " + test::carma("workloads.csv") + " --trace " +
                             test::carma("traces/philly_mix_90_tasks.csv") + " " + args);
}

TEST(ColoSimCli, DoneWhenCommands) {
  if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
  const CliRun ex = run_colo("--gpus 4 --gpu-memory-mib 40960 --policy exclusive --estimator none --json");
  ASSERT_EQ(ex.status, 0) << ex.out;
  const auto e = nlohmann::json::parse(ex.out);
  for (const char* k : {"jobs", "completed", "makespan_s", "avg_wait_s", "avg_exec_s", "avg_jct_s", "energy_mj",
                        "oom_crashes", "smact_avg", "lower_bound_s"})
    EXPECT_TRUE(e.contains(k)) << k;
  EXPECT_EQ(e["jobs"], 90);
  EXPECT_EQ(e["completed"], 90);
  EXPECT_EQ(e["oom_crashes"], 0);
  const CliRun mg = run_colo("--gpus 4 --gpu-memory-mib 40960 --policy magm --estimator oracle --sharing mps --json");
  ASSERT_EQ(mg.status, 0) << mg.out;
  const auto m = nlohmann::json::parse(mg.out);
  EXPECT_EQ(m["completed"], 90);
  EXPECT_LT(m["makespan_s"].get<double>(), e["makespan_s"].get<double>());
  EXPECT_LE(m["lower_bound_s"].get<double>(), m["makespan_s"].get<double>());
  // The packing programme binds on this trace (docs/SIMULATOR.md): above the SM-activity term's
  // 24 570 s, below the makespan; the energy bound below the energy.
  EXPECT_GT(m["lower_bound_s"].get<double>(), 25000);
  ASSERT_TRUE(m["energy_lower_bound_mj"].is_number());
  EXPECT_LE(m["energy_lower_bound_mj"].get<double>(), m["energy_mj"].get<double>());
  EXPECT_GT(m["energy_lower_bound_mj"].get<double>(), 0.8 * m["energy_mj"].get<double>());
}

TEST(ColoSimCli, BadFlagsGiveOneLine) {
  if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
  for (const char* bad : {"--policy nope", "--smact-cap 0.8", "--estimator nope", "--sharing mig", "--compare --policy magm",
                          "--floor sometimes", "--backfill -1", "--backfill-depth 0", "--slots -1",
                          "--slots 10ms", "--slots 600 --slot-notice 600", "--slot-notice 60", "--sharing mig",
                          "--mig 3g.20gb", "--sharing mig --mig 9g.90gb", "--compare --sharing mig --mig 3g.20gb"}) {
    const CliRun r = run_colo(bad);
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_EQ(r.out.rfind("colo: error: ", 0), 0u) << bad << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << bad << ": " << r.out;
  }
}

// Empty values are errors, not "not given" (which fell through to defaults or the real NVML);
// text that ends up in config files is checked.
TEST(ColoSimCli, EmptyAndMalformedTextValuesGiveOneLine) {
  if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
  const std::string out = ::testing::TempDir() + "colo_cli_empty";
  std::filesystem::remove_all(out);
  for (const std::string& bad : std::vector<std::string>{
           "sim --report ''", "sim --report /", "sim --slots 1e-300", "slurm conf --out " + out + " --fake-gpus ''",
        "slurm conf --out " + out + " --fake-gpus 1x40GiB --fake-gpu-dir " + out + "/g --node 'a b'",
        "bench collocation --sharing mps --job a=x --job b=y --out " + out + ".toml --warmup-s ''",
        "bench collocation --sharing mps --job a=x --job b=y --out " + out + ".toml --gpu ''",
        "gpumemnet cv --dataset " + std::string(COLO_SOURCE_DIR) + "/data/gpumemnet/mlp.csv --format gpumemnet-mlp --folds 0",
        "estimate --summary " + std::string(COLO_SOURCE_DIR) + "/data/carma/summaries/resnet18_cifar100.model --batch 8 --amp bf16"}) {
    const CliRun r = test::run_colo_args(bad);
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_EQ(r.out.rfind("colo: error: ", 0), 0u) << bad << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << bad << ": " << r.out;
  }
  EXPECT_FALSE(std::filesystem::exists(out));
}

// `colo report --state-dir ''` is an error naming the flag, not "no colod database at /colo.db".
TEST(ColoReportCli, AnEmptyStateDirIsNamed) {
  if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
  const CliRun r = test::run_colo_args("report --state-dir '' --report " + ::testing::TempDir() + "colo_report_empty.html");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(r.out, "colo: error: --state-dir: empty value (see --help)\n");
}

// Settings that would be silently ignored, or that no job could meet, are one-line errors.
TEST(ColoSimCli, FlagsThatWouldBeIgnoredOrImpossibleAreRefused) {
  if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
  const std::string pf = ::testing::TempDir() + "colo_cli_policies.toml";
  std::ofstream(pf) << "[policies.blend]\nfilters = [\"fits_memory\"]\nscorers = { most_free_mem = 1 }\n";
  const std::string solo = ::testing::TempDir() + "colo_cli_solo.toml";
  std::ofstream(solo) << "[policies.solo]\nfilters = [\"idle_only\"]\nscorers = { first = 1 }\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--backfill-depth 10", "--backfill-depth only matters with --backfill N"},
      {"--recovery-step-mib 1024", "--recovery-step-mib is loose recovery's step"},
      {"--recovery none --recovery-share", "with --recovery none there is none"},
      {"--adds-progress --no-conditions", "--adds-progress is a condition on co-runners; --no-conditions has none"},
      {"--adds-progress --policy exclusive", "--adds-progress is a condition on co-runners; policy 'exclusive' places whole GPUs"},
      {"--adds-progress --sharing mig --mig 3g.20gb,4g.20gb", "--mig (one job per instance) has none"},
      {"--adds-progress --policy-file " + solo + " --policy solo", "policy 'solo' places whole GPUs"},
      {"--model ''", "--model: empty value"},
      {"--model /tmp", "/tmp: is a directory, not a model file"},
      {"--policy-file ''", "--policy-file: empty value"},
      {"--compare --policy-file " + pf, "--compare runs the whole thesis matrix; drop --policy-file"},
      {"--policy-file " + pf, "--policy-file defines policies for --policy NAME; without --policy the default (magm) runs"},
      // A notice the user did not give is named as the default it is.
      {"--slots 0.5", "--slots 0.5 (its notice 0.05 s by default): a time slot must last at least 1 s"},
      {"--sharing mig --mig 3g.20gb,4g.20gb --min-free-mib 40GiB",
       "--min-free-mib 40960 is larger than the largest MIG instance of --mig 3g.20gb,4g.20gb (19456 MiB)"},
  };
  for (const auto& [args, want] : cases) {
    const CliRun r = run_colo(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find(want), std::string::npos) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << ": " << r.out;
  }
  for (const auto& [args, want] : std::vector<std::pair<std::string, std::string>>{
           {"--job a:0.9:1h:0 --job b:0.9:1h:0 --sharing streams", "BUSY must be in [SMACT, 1] = [0.9, 1]"},
           {"--job \"$(printf 'a\\nb:0.5:1h')\" --sharing mps", "the name holds a control character (\\n)"},
           {"--job a:0.5:1h --sharing mig --mig 3g.20gb --gpu-memory-mib 10", "--gpu-memory-mib is for --sharing streams or mps"}}) {
    const CliRun r = test::run_colo_args("sim collocation " + args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find(want), std::string::npos) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << ": " << r.out;
  }
  std::filesystem::remove(pf);
}

// --report writes the page without harm to what the name points at: a symbolic link stays a
// link (its target gets the page), a FIFO or device is written in place (renaming over it would
// destroy it), and a planted PATH.tmp link is never followed (the temporary was a fixed name).
// What a command prints that cannot be written (a full disk) fails the command.
TEST(ColoSimCli, OutputsKeepWhatTheirNameIsAndAFailedWriteFails) {
  if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
  namespace fs = std::filesystem;
  const fs::path d = fs::path(::testing::TempDir()) / "colo_cli_outputs";
  fs::remove_all(d);
  fs::create_directories(d);
  const auto read_all = [](const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  std::ofstream(d / "victim.txt") << "precious\n";
  fs::create_symlink(d / "victim.txt", d / "page.html.tmp");
  fs::create_symlink("target.html", d / "link.html");
  CliRun r = run_colo("--gpus 4 --policy exclusive --report " + (d / "page.html").string() + " >/dev/null && " +
                      std::string(COLO_BINARY_DIR) + "/colo sim --workloads " + test::carma("workloads.csv") + " --trace " +
                      test::carma("traces/philly_mix_90_tasks.csv") + " --gpus 4 --policy exclusive --report " +
                      (d / "link.html").string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(read_all(d / "victim.txt"), "precious\n");
  EXPECT_NE(read_all(d / "page.html").find("window.COLO_REPORT"), std::string::npos);
  EXPECT_TRUE(fs::is_symlink(d / "link.html"));
  EXPECT_NE(read_all(d / "target.html").find("window.COLO_REPORT"), std::string::npos);
  // /dev/stdout leads to a log the shell opened for appending: the page is added to it, not put
  // in its place (what the log held stays). A replaced file keeps its permissions.
  std::ofstream(d / "log.txt") << "before\n";
  std::ofstream(d / "private.html") << "old\n";
  fs::permissions(d / "private.html", fs::perms::owner_read | fs::perms::owner_write);
  r = run_colo("--gpus 4 --policy exclusive --report /dev/stdout >> " + (d / "log.txt").string() + " && " +
               std::string(COLO_BINARY_DIR) + "/colo sim --workloads " + test::carma("workloads.csv") + " --trace " +
               test::carma("traces/philly_mix_90_tasks.csv") + " --gpus 4 --policy exclusive --report " +
               (d / "private.html").string());
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string log = read_all(d / "log.txt");
  EXPECT_EQ(log.rfind("before\n", 0), 0u) << log.substr(0, 200);
  EXPECT_NE(log.find("window.COLO_REPORT"), std::string::npos);
  EXPECT_EQ(fs::status(d / "private.html").permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_NE(read_all(d / "private.html").find("window.COLO_REPORT"), std::string::npos);
  // A FIFO: the page reaches its reader, and the FIFO is still one.
  ASSERT_EQ(::mkfifo((d / "fifo").c_str(), 0600), 0);
  r = run_colo("--gpus 4 --policy exclusive --report " + (d / "fifo").string() + " >/dev/null & timeout 120 cat " +
               (d / "fifo").string() + " > " + (d / "from-fifo.html").string() + "; wait $!");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(fs::is_fifo(d / "fifo"));
  EXPECT_NE(read_all(d / "from-fifo.html").find("window.COLO_REPORT"), std::string::npos);
  if (fs::exists("/dev/full")) {
    const std::string err = (d / "err.txt").string();
    r = run_colo("--gpus 4 --policy exclusive --json >/dev/full 2>" + err + "; echo rc=$?; cat " + err);
    EXPECT_EQ(r.out, "rc=1\ncolo: error: cannot write the output: No space left on device\n");
  }
  fs::remove_all(d);
}

// A run where nothing completes has no fairness index and no change against exclusive: "n/a"
// (was -nan% and a Jain index of 1.000), null in JSON.
TEST(ColoSimCli, NothingCompletedIsNotANumber) {
  if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
  const std::string trace = ::testing::TempDir() + "colo_cli_only2.csv";
  std::ofstream(trace) << "submit_offset_s,workload\n0,gpt2_large_2\n";
  const std::string base = "sim --workloads " + test::carma("workloads.csv") + " --trace " + trace + " --gpus 1 ";
  const CliRun table = test::run_colo_args(base + "--compare");
  ASSERT_EQ(table.status, 0) << table.out;
  EXPECT_EQ(table.out.find("nan"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("n/a"), std::string::npos) << table.out;
  const CliRun one = test::run_colo_args(base + "--json");
  ASSERT_EQ(one.status, 0) << one.out;
  EXPECT_TRUE(nlohmann::json::parse(one.out)["jain_index"].is_null()) << one.out;
  std::filesystem::remove(trace);
}

// --compare applies --floor always and --adds-progress to every row with conditions, --backfill
// and --duration-jitter to every row: the table's header says so (it read like a plain thesis
// matrix before).
TEST(ColoSimCli, CompareHeaderNamesTheRulesGiven) {
  if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
  const std::string trace = ::testing::TempDir() + "colo_cli_header.csv";
  std::ofstream(trace) << "submit_offset_s,workload\n0,resnet\n";
  const std::string base = "sim --workloads " + test::carma("workloads.csv") + " --trace " + trace + " --gpus 1 --compare";
  // The table's header line (stderr's progress lines come first in the output).
  auto header = [](const std::string& out) {
    const auto at = out.find("\ntrace ");
    return at == std::string::npos ? std::string() : out.substr(at + 1, out.find('\n', at + 1) - at - 1);
  };
  const CliRun plain = test::run_colo_args(base);
  ASSERT_EQ(plain.status, 0) << plain.out;
  ASSERT_NE(header(plain.out), "") << plain.out;
  EXPECT_EQ(header(plain.out).find("floor"), std::string::npos) << plain.out;
  EXPECT_EQ(header(plain.out).find("adds-progress"), std::string::npos) << plain.out;
  EXPECT_EQ(header(plain.out).find("every row"), std::string::npos) << plain.out;
  const CliRun ruled = test::run_colo_args(base + " --floor always --adds-progress --backfill 3 --duration-jitter 0.1 --seed 7");
  ASSERT_EQ(ruled.status, 0) << ruled.out;
  EXPECT_NE(header(ruled.out).find("; rows with conditions: floor always, adds-progress; every row: backfill 3 (depth "
                                   "200), durations jittered ±0.1 (seed 7)"),
            std::string::npos)
      << ruled.out;
  std::filesystem::remove(trace);
}

// MIG: the report has a row and a series per instance, with its own memory; the most jobs on
// one GPU counts the physical GPU; the command on the page reproduces the run.
TEST(ColoSimCli, MigReportsInstancesAndCountsJobsPerPhysicalGpu) {
  if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
  const std::string page = ::testing::TempDir() + "colo_cli_mig.html";
  const CliRun r = run_colo("--sharing mig --mig 1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb --json --report " + page);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto at = r.out.find('{');
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_GT(nlohmann::json::parse(r.out.substr(at))["max_jobs_per_gpu"].get<int>(), 1) << r.out;
  std::ifstream in(page);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string html = ss.str();
  const auto data_at = html.find("window.COLO_REPORT = ");
  ASSERT_NE(data_at, std::string::npos);
  const auto begin = data_at + std::string("window.COLO_REPORT = ").size();
  const auto rep = nlohmann::json::parse(html.substr(begin, html.find(";</script>", begin) - begin));
  const auto& run = rep["runs"][0];
  EXPECT_EQ(run["gpus"], 28);
  EXPECT_EQ(run["physical_gpus"], 4);
  EXPECT_TRUE(run["gpu_memory_mib"].is_null());
  ASSERT_EQ(run["slots"].size(), 28u);
  EXPECT_EQ(run["slots"][8]["label"], "GPU 1 · 1g.5gb");
  EXPECT_EQ(run["series"]["gpus"].size(), 28u);
  const std::string cmd = rep["generated_by"];
  EXPECT_NE(cmd.find("--mig 1g.5gb,"), std::string::npos) << cmd;
  EXPECT_EQ(cmd.find("--gpu-memory-mib"), std::string::npos) << cmd;
  std::filesystem::remove(page);
}

// colo's Slurm commands: a hold code that ordinary failures use, paths Slurm's lines cannot
// hold, an --out that is a file, empty sizing flags, a failed `recover --once` pass; and
// --dry-run prints a command that is safe to paste.
TEST(ColoSlurmCli, BadSettingsAreRefusedAndDryRunIsQuoted) {
  if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
  const std::string d = ::testing::TempDir() + "colo_cli_slurm";
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  const std::string conf = "slurm conf --fake-gpus 1x40GiB --fake-gpu-dir " + d + "/g --node n1 --state-dir " + d +
                           "/state --site-path " + d + "/out/colo-slurm.toml --dev-prefix " + d + "/dev/nvidia ";
  for (const auto& [args, want] : std::vector<std::pair<std::string, std::string>>{
           {conf + "--out " + d + "/o1 --hold-exit-code 1", "--hold-exit-code 1 is what ordinary failures exit with"},
           {conf + "--out " + d + "/o2 --hold-exit-code 255", "pick one in 3..125"},
           {"slurm conf --fake-gpus 1x40GiB --fake-gpu-dir " + d + "/g --out " + d + "/o3 --state-dir rel", "--state-dir must be an absolute path"},
           {"slurm conf --fake-gpus 1x40GiB --fake-gpu-dir " + d + "/g --out " + d + "/o4 --site-path '/etc/my colo/s.toml'",
            "--site-path '/etc/my colo/s.toml': blanks"}}) {
    const CliRun r = test::run_colo_args(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find(want), std::string::npos) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << ": " << r.out;
  }
  std::ofstream(d + "/afile") << "x";
  CliRun r = test::run_colo_args(conf + "--out " + d + "/afile");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("cannot make it a directory"), std::string::npos) << r.out;
  r = test::run_colo_args(conf + "--out " + d + "/out");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string site = " --site " + d + "/out/colo-slurm.toml ";
  std::ofstream(d + "/js.sh") << "#!/bin/sh\ntrue\n";
  r = test::run_colo_args("sbatch" + site + "--gpu-mem '' --dry-run " + d + "/js.sh");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--gpu-mem: empty value"), std::string::npos) << r.out;
  r = test::run_colo_args("sbatch" + site + "--gpu-mem 8GiB --dry-run --no-history --comment 'my run; rm -rf x' -J 'a b' " +
                          d + "/js.sh 2>/dev/null");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("'--comment=colo:mem_mib=8192,est=user,fp="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" my run; rm -rf x' -J 'a b' "), std::string::npos) << r.out;
  // The job's allocator settings (exported to it by sbatch) make it another run for the history,
  // and a value PyTorch would refuse is refused here.
  auto fp_of = [](const std::string& out) {
    const auto at = out.find(",fp=");
    return at == std::string::npos ? std::string() : out.substr(at + 4, out.find_first_of(" '", at) - at - 4);
  };
  const std::string plain = "sbatch" + site + "--gpu-mem 8GiB --dry-run --no-history " + d + "/js.sh";
  ::unsetenv("PYTORCH_CUDA_ALLOC_CONF");
  ::unsetenv("PYTORCH_ALLOC_CONF");
  const CliRun defaults = test::run_colo_args(plain + " 2>/dev/null");
  ::setenv("PYTORCH_ALLOC_CONF", "expandable_segments:True", 1);
  const CliRun expandable = test::run_colo_args(plain + " 2>/dev/null");
  ::setenv("PYTORCH_ALLOC_CONF", "expandable_segments:no", 1);
  r = test::run_colo_args(plain);
  ::unsetenv("PYTORCH_ALLOC_CONF");
  ASSERT_EQ(defaults.status, 0) << defaults.out;
  ASSERT_EQ(expandable.status, 0) << expandable.out;
  EXPECT_FALSE(fp_of(defaults.out).empty()) << defaults.out;
  EXPECT_NE(fp_of(defaults.out), fp_of(expandable.out)) << defaults.out << expandable.out;
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("PYTORCH_ALLOC_CONF 'expandable_segments:no'"), std::string::npos) << r.out;
  // What sbatch would also read is checked as the command line is, and flags that nothing reads
  // are refused, not ignored.
  std::ofstream(d + "/gpu.sh") << "#!/bin/sh\n#SBATCH --gpus=2\ntrue\n";
  std::ofstream(d + "/keep.sh") << "#!/bin/sh\n#SBATCH --gres=nvme:1\n#SBATCH --comment=project-42\ntrue\n";
  for (const auto& [args, want] : std::vector<std::pair<std::string, std::string>>{
           {"--gpu-mem 8GiB --dry-run " + d + "/gpu.sh", d + "/gpu.sh: #SBATCH: '--gpus': colo sbatch sizes the GPU share"},
           {"--gpu-mem 8GiB --dry-run --gres=gres:gpu:1 " + d + "/js.sh", "'--gres=gres:gpu:1': colo sbatch sizes the GPU share"},
           {"--gpu-mem 8GiB --batch 64 --dry-run " + d + "/js.sh", "--batch is for an estimate"},
           {"--gpu-mem 8GiB --amp fp16 --dry-run " + d + "/js.sh", "--amp goes with --probe MODEL"},
           {"--gpu-mem 8GiB --probe-timeout 5 --dry-run " + d + "/js.sh", "--probe-timeout goes with --probe MODEL"},
           {"--dry-run -J x --gpu-mem 8GiB " + d + "/js.sh", "'--gpu-mem' comes after an sbatch option"},
           {"--gpu-mem 8GiB --dry-run " + d, "is not a regular file"}}) {
    r = test::run_colo_args("sbatch" + site + args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find(want), std::string::npos) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << ": " << r.out;
  }
  r = test::run_colo_args("sbatch" + site + "--gpu-mem 8GiB --dry-run --no-history " + d + "/keep.sh 2>/dev/null");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("--gres=shard:9,nvme:1 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" project-42'"), std::string::npos) << r.out;
  r = test::run_colo_args("slurm task-prolog --site ''");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--site: empty value"), std::string::npos) << r.out;
  // A state directory that cannot be made (a file in its path): one line naming it, not an
  // internal error.
  r = test::run_colo_args("slurm conf --fake-gpus 1x40GiB --fake-gpu-dir " + d + "/g --node n1 --state-dir " + d +
                          "/afile/state --site-path " + d + "/o5/colo-slurm.toml --dev-prefix " + d + "/dev/nvidia --out " + d + "/o5");
  ASSERT_EQ(r.status, 0) << r.out;
  r = test::run_colo_args("slurm recover --once --site " + d + "/o5/colo-slurm.toml");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("colo: error: filesystem error: cannot create directories: Not a directory [" + d + "/afile/state]"),
            std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  // No squeue to ask (PATH has none): the one pass fails, and --once says so in its exit status.
  const std::string env_cmd = "env SLURM_CONF=/nonexistent PATH=/nonexistent " + std::string(COLO_BINARY_DIR) + "/colo";
  FILE* p = popen((env_cmd + " slurm recover --once" + site + "2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  const int status = WEXITSTATUS(pclose(p));
  EXPECT_NE(status, 0) << out;
  EXPECT_NE(out.find("colo slurm recover --once: the pass failed"), std::string::npos) << out;
  std::filesystem::remove_all(d);
}

// --compare: the thesis' rows, then each of colo's rules on its own; slots cut the longest wait.
TEST(ColoSimCli, CompareHasColosRules) {
  if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
  const CliRun r = run_colo("--compare --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto at = r.out.find("[{");  // the progress lines (stderr) come first
  ASSERT_NE(at, std::string::npos) << r.out;
  const auto rows = nlohmann::json::parse(r.out.substr(at));
  ASSERT_EQ(rows.size(), 39u);
  auto find = [&](const std::string& label) {
    for (const auto& row : rows)
      if (row["scenario"] == label && row["sharing"] == "mps") return row;
    ADD_FAILURE() << label;
    return nlohmann::json();
  };
  for (const char* label : {"MAGM+allocsim floor", "MAGM+allocsim bf10", "MAGM+allocsim slot1h", "MAGM+allocsim progress",
                            "MAGM+faketensor share"})
    EXPECT_EQ(find(label)["completed"], 90) << label;
  EXPECT_LT(find("MAGM+allocsim slot1h")["max_wait_s"].get<double>(), find("MAGM+allocsim")["max_wait_s"].get<double>());
  EXPECT_GT(find("MAGM+allocsim slot1h")["checkpoints"].get<int>(), 0);
  EXPECT_LT(find("MAGM+allocsim bf10")["avg_wait_s"].get<double>(), find("MAGM+allocsim")["avg_wait_s"].get<double>());
}

// colo sim collocation: the chapter-4 experiment on the model, JSON and one-line errors.
TEST(ColoSimCli, CollocationReplaysOneGpu) {
  if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
  const CliRun r = test::run_colo_args(
      "sim collocation --job recommender:0.05:5.36h:0.05 --job resnet152:0.82:6h --sharing mig --mig 3g.20gb,3g.20gb "
      "--json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["jobs"].size(), 2u);
  EXPECT_NEAR(j["jobs"][1]["slowdown"].get<double>(), 1.333, 0.01);
  EXPECT_EQ(j["jobs"][1]["instance"], "3g.20gb");
  for (const char* bad : {"sim collocation --job a:0.5:1h --sharing mig", "sim collocation --job a:1.5:1h --sharing mps",
                          "sim collocation --job a:0.5 --sharing mps", "sim collocation --sharing mps",
                          "sim collocation --job a:0.5:1h:0.5:99GiB --sharing mig --mig 1g.5gb",
                          "sim collocation --job a:0.5:1h --sharing mig --mig 4g.20gb,4g.20gb",
                          "sim collocation --job a:0.5:1h --sharing gang",
                          // memory is shared under MPS and streams; no zero-length jobs; names are unique
                          "sim collocation --job a:0.5:1h:0.5:30GiB --job b:0.5:1h:0.5:30GiB --sharing mps",
                          "sim collocation --job a:0.5:1h:0.5:50GiB --sharing streams",
                          "sim collocation --job a:0.5:0 --sharing mps",
                          "sim collocation --job a:0.5:1h --job a:0.2:1h --sharing mps"}) {
    const CliRun e = test::run_colo_args(bad);
    EXPECT_EQ(e.status, 2) << bad;
    EXPECT_EQ(e.out.rfind("colo: error: ", 0), 0u) << bad << ": " << e.out;
    EXPECT_EQ(std::count(e.out.begin(), e.out.end(), '\n'), 1) << bad << ": " << e.out;
  }
}

// --floor always: the free-memory floor also holds for known needs. With a floor above every
// estimate in the 90-task trace, tiny FakeTensor estimates stack fewer jobs into OOM crashes.
TEST(ColoSimCli, FloorAlwaysHoldsTheFloorForEstimatedJobsToo) {
  if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
  auto ooms = [](const std::string& floor) {
    const CliRun r = run_colo("--policy magm --estimator faketensor --min-free-mib 15360 --floor " + floor + " --json");
    EXPECT_EQ(r.status, 0) << r.out;
    return nlohmann::json::parse(r.out)["oom_crashes"].get<int>();
  };
  EXPECT_LT(ooms("always"), ooms("unknown"));
}

// --backfill N: jobs behind a waiting head start where they fit, bounded per head; on the
// 90-task trace the mean wait falls, and every job still completes.
TEST(ColoSimCli, BackfillingShortensTheMeanWait) {
  if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
  auto run = [](const std::string& bf) {
    const CliRun r = run_colo("--policy magm --estimator oracle --backfill " + bf + " --json");
    EXPECT_EQ(r.status, 0) << r.out;
    return nlohmann::json::parse(r.out);
  };
  const auto fifo = run("0"), bf = run("100");
  EXPECT_EQ(bf["completed"], fifo["completed"]);
  EXPECT_LT(bf["avg_wait_s"].get<double>(), 0.8 * fifo["avg_wait_s"].get<double>());
  EXPECT_NE(bf["policy"].get<std::string>().find("backfill 100 per head"), std::string::npos);
}

// --policy-file: a site's own policy, a weighted blend of shipped scorers, runs by name; a
// definition that repeats MAGM schedules exactly as MAGM.
TEST(ColoSimCli, SitePoliciesFromAFileRunByName) {
  if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
  const std::string file = (std::filesystem::temp_directory_path() / "colo-sim-policies.toml").string();
  {
    std::ofstream out(file);
    out << "[policies.blend]\nfilters = [\"fits_memory\", \"smact_below\"]\n"
           "scorers = { most_free_mem = 0.5, least_smact = 0.5 }\n"
           "[policies.my-magm]\nfilters = [\"fits_memory\", \"smact_below\"]\nscorers = { most_free_mem = 1 }\n";
  }
  auto run = [&](const std::string& policy) {
    const CliRun r = run_colo("--policy-file " + file + " --policy " + policy + " --estimator oracle --json");
    EXPECT_EQ(r.status, 0) << r.out;
    return nlohmann::json::parse(r.out);
  };
  const auto blend = run("blend"), mine = run("my-magm"), magm = run("magm");
  EXPECT_EQ(blend["policy"], "blend: fits_memory+smact_below -> weighted(least_smact:0.5,most_free_mem:0.5)");
  EXPECT_EQ(blend["completed"], magm["completed"]);
  EXPECT_EQ(mine["makespan_s"], magm["makespan_s"]);
  const CliRun bad = run_colo("--policy-file " + file + " --policy nope");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.out, "colo: error: --policy 'nope' is neither shipped nor defined in " + file + "\n");
  std::filesystem::remove(file);
}

// --model: the simulator's parameters from a file; the shipped file gives the built-in result,
// a changed interference another one.
TEST(ColoSimCli, AModelFileSetsTheSimulatorsParameters) {
  if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
  const std::string shipped = std::string(COLO_SOURCE_DIR) + "/models/sim/a100-thesis.toml";
  auto makespan = [](const std::string& extra) {
    const CliRun r = run_colo("--policy magm --estimator oracle --json" + extra);
    EXPECT_EQ(r.status, 0) << r.out;
    return nlohmann::json::parse(r.out)["makespan_s"].get<double>();
  };
  EXPECT_EQ(makespan(" --model " + shipped), makespan(""));
  std::ifstream in(shipped);
  std::stringstream text;
  text << in.rdbuf();
  std::string t = text.str();
  t.replace(t.find("interference = { value = 0.05"), 29, "interference = { value = 0.00");
  const std::string file = (std::filesystem::temp_directory_path() / "colo-sim-no-interference.toml").string();
  std::ofstream(file) << t;
  EXPECT_LT(makespan(" --model " + file), makespan(""));
  std::filesystem::remove(file);
}

// --recovery-share: a recovered job lets others join once its peak is seen; every job still
// completes, and on the 90-task trace without estimates the schedule is shorter.
TEST(ColoSimCli, RecoveryShareLetsOthersJoinARecoveredJob) {
  if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
  auto run = [](const std::string& extra) {
    const CliRun r = run_colo("--policy magm --estimator none --json" + extra);
    EXPECT_EQ(r.status, 0) << r.out;
    return nlohmann::json::parse(r.out);
  };
  const auto alone = run(""), shared = run(" --recovery-share");
  EXPECT_EQ(shared["completed"], alone["completed"]);
  EXPECT_GT(alone["oom_crashes"].get<int>(), 0);
  EXPECT_LT(shared["makespan_s"].get<double>(), alone["makespan_s"].get<double>());
}

// --adds-progress: on the 90-task trace (MPS, allocsim's estimates) fewer jobs share a GPU, the
// GPUs do more SM work per second, the schedule is shorter, and nothing crashes.
TEST(ColoSimCli, AddsProgressKeepsJobsOffSaturatedGpus) {
  if (!test::have_colo_binary()) GTEST_SKIP() << "build/colo not built in this tree";
  auto run = [](const std::string& extra) {
    const CliRun r = run_colo("--policy magm --estimator allocsim --smact-cap 90 --backfill 100 --json" + extra);
    EXPECT_EQ(r.status, 0) << r.out;
    return nlohmann::json::parse(r.out);
  };
  const auto plain = run(""), progress = run(" --adds-progress");
  EXPECT_EQ(progress["policy"], "magm: fits_memory+smact_below+adds_progress -> most_free_mem, backfill 100 per head (depth 200)");
  EXPECT_EQ(progress["completed"], 90);
  EXPECT_EQ(progress["oom_crashes"], 0);
  EXPECT_LT(progress["max_jobs_per_gpu"].get<int>(), plain["max_jobs_per_gpu"].get<int>());
  EXPECT_GT(progress["smact_avg"].get<double>(), plain["smact_avg"].get<double>());
  EXPECT_LT(progress["makespan_s"].get<double>(), plain["makespan_s"].get<double>());
}

}  // namespace
}  // namespace colo::sim
