// colo submit --probe end to end: colod runs the real CPU-only probe (python/colo_probe on
// Debian's python3-torch) for the job, as the submitter, with a deadline; the job waits in
// "estimating" and queues with the trace estimate, or with its fallback (--mem, else unknown).
// Every wait is on observed state (the job's recorded state, a file the model file writes, a
// process that is gone), never on a guessed duration.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include <gtest/gtest.h>

#include "daemon_harness.h"
#include "estimate/trace/probe_runner.h"

namespace colo::daemon::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Model files the probe loads; `dir` is readable by every user (the probe may run as nobody).
// MARK, when the test sets it, is a directory the model file reports into.
std::string write_models(const std::string& dir, const std::string& mark) {
  std::filesystem::create_directories(dir);
  ::chmod(dir.c_str(), 0755);
  std::ofstream(dir + "/models.py") << R"(import os, signal
import torch.nn as nn
MARK = ")" << mark << R"("

def _net():
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))

def not_root():
    if os.getuid() == 0:
        raise RuntimeError("the probe runs as root")
    return _net()

def broken():
    raise ValueError("this model cannot be built")

def hang():
    with open(os.path.join(MARK, "hang.pid"), "w") as f:
        f.write(str(os.getpid()))
    signal.pause()  # blocks until colod kills it: no duration is assumed

def spew_and_hang():
    import sys
    chunk = "x" * (1 << 20)
    for _ in range(80):  # past colod's 64 MiB for a probe's stderr
        sys.stderr.write(chunk)
    sys.stderr.flush()
    signal.pause()  # only colod's size check ends it (the deadline is far)

def escape_and_hang():
    # A child that leaves the probe's process group (as a data loader or a launcher might).
    if os.fork() == 0:
        os.setsid()
        with open(os.path.join(MARK, "escaped.pid.tmp"), "w") as f:
            f.write(str(os.getpid()))
        os.rename(os.path.join(MARK, "escaped.pid.tmp"), os.path.join(MARK, "escaped.pid"))
        signal.pause()
    signal.pause()

def hang_once():
    # The first probe hangs (colod is killed meanwhile); the one a restarted colod starts builds.
    first = os.path.join(MARK, "first.pid")
    if not os.path.exists(first):
        with open(first + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(first + ".tmp", first)
        signal.pause()
    return _net()
)";
  ::chmod((dir + "/models.py").c_str(), 0644);
  return dir;
}

bool process_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

// `colo submit ARGS` as nobody, then the job's record once it has ended: (id, record). The job and
// its probe must both be done; a refused submission is a failure (id 0, a null record).
std::pair<std::uint64_t, json> submit_probed_as_nobody(ColodProcess& d, const std::vector<std::string>& args) {
  const RunResult sub = d.colo(args, 65534);
  if (sub.rc != 0) {
    ADD_FAILURE() << "submit refused: " << sub.err;
    return {0, json()};
  }
  const std::uint64_t id = std::stoull(sub.out);
  json j = d.wait_terminal(id, 180s);
  EXPECT_EQ(j.at("state"), "done") << j.dump(2);
  EXPECT_EQ(j.at("probe").at("status"), "done") << j.dump(2);
  return {id, std::move(j)};
}

// Processes whose working directory is `dir` (the probe runs in the job's working directory).
int processes_in(const std::string& dir) {
  int n = 0;
  std::error_code ec;
  const auto want = std::filesystem::canonical(dir, ec);
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec2;
    const auto cwd = std::filesystem::read_symlink(e.path() / "cwd", ec2);
    if (!ec2 && cwd == want) ++n;
  }
  return n;
}

// A training script of an MLP as wide as `hidden` (a Python expression over `imports`) says, on the
// GPU where there is one: colod probes it, then the job runs it for real on the CPU.
std::string mlp_training_script(const std::string& imports, const std::string& hidden) {
  return "import " + imports + ", torch, torch.nn as nn\nhidden = " + hidden + R"(
device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10)).to(device)
opt = torch.optim.Adam(model.parameters())
for step in range(3):
    opt.zero_grad()
    model(torch.randn(32, 64, device=device)).sum().backward()
    opt.step()
)";
}

TEST(ColodProbe, ProbeRunsAsTheSubmitterAndTheJobPlansWithItsTraceEstimate) {
  if (const std::string why = cannot_probe_as_nobody(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const std::string models = write_models(dir.path() + "/models", dir.path());
  ColodProcess d(dir.path(), "1x40GiB");
  // With the job's own allocator settings: colod's probe has a clean environment, and they must
  // still reach it (and so the estimate).
  const RunResult sub = d.colo({"submit", "--workdir", models, "--probe", "models.py:not_root", "--input", "64",
                                "--batch", "32", "--optimizer", "adamw", "--env",
                                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "--", "/bin/true"},
                               65534);
  ASSERT_EQ(sub.rc, 0) << sub.err;
  const std::uint64_t id = std::stoull(sub.out);
  const json j = d.wait_terminal(id, 120s);
  EXPECT_EQ(j.at("state"), "done") << j.dump(2);
  EXPECT_EQ(j.at("user"), "nobody");
  EXPECT_EQ(j.at("need_source"), "trace") << j.dump(2);
  const json& p = j.at("probe");
  EXPECT_EQ(p.at("status"), "done") << j.dump(2);
  EXPECT_EQ(p.at("runs"), 1);
  EXPECT_EQ(p.at("request").at("optimizer"), "adamw");
  EXPECT_EQ(p.at("request").at("alloc_conf"), "expandable_segments:True");
  EXPECT_NE(j.at("need_explanation").get<std::string>().find("allocator settings expandable_segments:True"),
            std::string::npos)
      << j.dump(2);
  EXPECT_EQ(p.at("estimate_mib"), j.at("need_mib"));
  // The CUDA context (about 1.4 GiB in the A100 profile) + a few MiB of a two-layer MLP.
  EXPECT_GT(j.at("need_mib").get<std::int64_t>(), 1000);
  EXPECT_LT(j.at("need_mib").get<std::int64_t>(), 2000);
  EXPECT_TRUE(has_event(j, "estimated")) << j.dump(2);
  const RunResult show = d.colo({"show", std::to_string(id)});
  EXPECT_NE(show.out.find("probe      models.py:not_root batch 32 adamw [trace]: done"), std::string::npos) << show.out;
}

// --probe-script: colod probes the job's own training script (its arguments, its working
// directory) as the submitter; the job then runs that same script for real.
TEST(ColodProbe, ProbeScriptRunsTheJobsOwnScriptAsTheSubmitter) {
  if (const std::string why = cannot_probe_as_nobody(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const std::string work = write_models(dir.path() + "/models", dir.path());
  std::ofstream(work + "/train.py") << R"(import os, sys, torch, torch.nn as nn
if os.getuid() == 0:
    raise RuntimeError("runs as root")
hidden = int(sys.argv[sys.argv.index("--hidden") + 1])
device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10)).to(device)
opt = torch.optim.Adam(model.parameters())
for step in range(3):
    x = torch.randn(32, 64, device=device)
    loss = model(x).logsumexp(1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
)";
  ::chmod((work + "/train.py").c_str(), 0644);
  ColodProcess d(dir.path(), "1x40GiB");
  const auto [id, j] = submit_probed_as_nobody(
      d, {"submit", "--workdir", work, "--probe-script", "--", "/usr/bin/python3", "train.py", "--hidden", "4096"});
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j.at("need_source"), "trace") << j.dump(2);
  const json& p = j.at("probe");
  EXPECT_EQ(p.at("request").at("script"), "train.py");
  EXPECT_EQ(p.at("request").at("script_args"), json::array({"--hidden", "4096"}));
  // The context (~1.4 GiB) + a 4096-wide MLP with Adam: a few MiB more than the 256-wide one.
  EXPECT_GT(j.at("need_mib").get<std::int64_t>(), 1000);
  EXPECT_LT(j.at("need_mib").get<std::int64_t>(), 2000);
  const RunResult show = d.colo({"show", std::to_string(id)});
  EXPECT_NE(show.out.find("probe      script train.py [trace]: done"), std::string::npos) << show.out;
}

// Files the probed script makes get the submitter's umask, as the job's own do — not colod's 077
// (a data set it downloads into a shared directory would be readable by its owner alone).
TEST(ColodProbe, ProbeScriptMakesFilesWithTheSubmittersUmask) {
  if (const std::string why = cannot_probe_as_nobody(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const std::string work = write_models(dir.path() + "/models", dir.path());
  ::chmod(work.c_str(), 0777);  // nobody writes into it
  // Under the probe torch.cuda answers as the target GPU would; the job itself runs on the CPU.
  std::ofstream(work + "/train.py")
      << "import torch\nopen('made-by-probe' if torch.cuda.is_available() else 'made-by-job', 'w').close()\n"
      << mlp_training_script("os", "64");
  ::chmod((work + "/train.py").c_str(), 0644);
  ColodProcess d(dir.path(), "1x40GiB");
  const mode_t before = ::umask(027);  // `colo submit` sends its caller's
  const auto [id, j] = submit_probed_as_nobody(d, {"submit", "--workdir", work, "--probe-script", "--", "python3", "train.py"});
  ::umask(before);
  ASSERT_FALSE(j.is_null());
  struct stat probe_file {}, job_file {};
  ASSERT_EQ(::stat((work + "/made-by-probe").c_str(), &probe_file), 0) << j.dump(2);
  ASSERT_EQ(::stat((work + "/made-by-job").c_str(), &job_file), 0) << j.dump(2);
  EXPECT_EQ(job_file.st_mode & 0777, 0640u);
  EXPECT_EQ(probe_file.st_mode & 0777, 0640u);
  EXPECT_EQ(probe_file.st_uid, 65534u);
}

// --probe-script under the job's own Python: colod looks the interpreter the command names up in the
// job's PATH and passes its PYTHONPATH, as the job's own start would, so the probe sees the job's
// packages (a virtual environment's). estimator.probe_python = PATH overrides that.
TEST(ColodProbe, ProbeScriptRunsUnderTheJobsOwnPython) {
  if (const std::string why = cannot_probe_as_nobody(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const std::string work = write_models(dir.path() + "/models", dir.path());
  for (const char* sub : {"/venv", "/venv/bin", "/venv/site", "/lib"}) {
    std::filesystem::create_directories(work + sub);
    ::chmod((work + sub).c_str(), 0755);
  }
  // A virtual environment's interpreter in miniature: Debian's Python with one more module.
  std::ofstream(work + "/venv/bin/python3") << "#!/bin/sh\nPYTHONPATH=\"${PYTHONPATH:+$PYTHONPATH:}" << work
                                             << "/venv/site\" exec /usr/bin/python3 \"$@\"\n";
  std::ofstream(work + "/venv/site/only_in_venv.py") << "HIDDEN = 2048\n";
  std::ofstream(work + "/lib/only_on_pythonpath.py") << "HIDDEN = 1024\n";
  std::ofstream(work + "/train.py") << mlp_training_script("importlib, sys", "importlib.import_module(sys.argv[1]).HIDDEN");
  for (const char* f : {"/venv/site/only_in_venv.py", "/lib/only_on_pythonpath.py", "/train.py"})
    ::chmod((work + f).c_str(), 0644);
  ::chmod((work + "/venv/bin/python3").c_str(), 0755);
  {
    ColodProcess d(dir.path(), "1x40GiB");
    const auto [venv_id, venv] = submit_probed_as_nobody(
        d, {"submit", "--workdir", work, "--env", "PATH=" + work + "/venv/bin:/usr/bin:/bin", "--probe-script", "--",
            "python3", "train.py", "only_in_venv"});
    ASSERT_FALSE(venv.is_null());
    EXPECT_EQ(venv.at("need_source"), "trace") << venv.dump(2);
    EXPECT_EQ(venv.at("probe").at("request").at("python"), "python3");
    const auto [lib_id, lib] = submit_probed_as_nobody(
        d, {"submit", "--workdir", work, "--env", "PYTHONPATH=" + work + "/lib", "--probe-script", "--", "python3",
            "train.py", "only_on_pythonpath"});
    ASSERT_FALSE(lib.is_null());
    EXPECT_EQ(lib.at("need_source"), "trace") << lib.dump(2);
    // The wider network of the two, found only through the virtual environment, needs more.
    EXPECT_GT(venv.at("need_mib").get<std::int64_t>(), lib.at("need_mib").get<std::int64_t>());
  }
  // The site's own interpreter for every probe: the job's module is not there, so the probe fails
  // with its reason and the job falls back to its --mem (and still runs under its own Python).
  const std::string cfg = dir.path() + "/colod.toml";
  std::ofstream(cfg) << "[estimator]\nprobe_python = \"/usr/bin/python3\"\n";
  ColodProcess d(dir.path() + "/site", "1x40GiB", {"--config", cfg});
  const RunResult sub = d.colo({"submit", "--workdir", work, "--env", "PATH=" + work + "/venv/bin:/usr/bin:/bin",
                                "--mem", "3GiB", "--probe-script", "--", "python3", "train.py", "only_in_venv"},
                               65534);
  ASSERT_EQ(sub.rc, 0) << sub.err;
  const json j = d.wait_terminal(std::stoull(sub.out), 180s);
  EXPECT_EQ(j.at("state"), "done") << j.dump(2);
  EXPECT_EQ(j.at("probe").at("status"), "failed") << j.dump(2);
  EXPECT_NE(j.at("need_explanation").get<std::string>().find("No module named 'only_in_venv'"), std::string::npos)
      << j.dump(2);
  EXPECT_EQ(j.at("need_mib"), 3072) << j.dump(2);
}

// --probe-script in the job's environment: a script that reads its settings from the environment
// (PyTorch Lightning's PL_TRAINER_*, a site's TORCH_HOME, its own variables) is probed with the
// values the job will run with. Before, colod's probe had only the job's PATH and PYTHONPATH, so
// such a script was probed with its defaults (or failed on a missing variable).
TEST(ColodProbe, ProbeScriptReadsTheJobsEnvironment) {
  if (const std::string why = cannot_probe_as_nobody(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const std::string work = write_models(dir.path() + "/models", dir.path());
  std::ofstream(work + "/train.py") << mlp_training_script("os", "int(os.environ[\"TRAIN_HIDDEN\"])");
  ::chmod((work + "/train.py").c_str(), 0644);
  ColodProcess d(dir.path(), "1x40GiB");
  const auto [wide_id, wide] = submit_probed_as_nobody(
      d, {"submit", "--workdir", work, "--env", "TRAIN_HIDDEN=8192", "--probe-script", "--", "python3", "train.py"});
  const auto [narrow_id, narrow] = submit_probed_as_nobody(
      d, {"submit", "--workdir", work, "--env", "TRAIN_HIDDEN=64", "--probe-script", "--", "python3", "train.py"});
  ASSERT_FALSE(wide.is_null());
  ASSERT_FALSE(narrow.is_null());
  EXPECT_EQ(wide.at("need_source"), "trace") << wide.dump(2);
  EXPECT_EQ(narrow.at("need_source"), "trace") << narrow.dump(2);
  // 8192 wide with Adam: the weights, gradients and two moments of 0.6 M parameters more.
  EXPECT_GT(wide.at("need_mib").get<std::int64_t>(), narrow.at("need_mib").get<std::int64_t>());
}

// --probe-script with torchrun: colod probes rank 0 of the processes torchrun would start (the
// DistributedDataParallel buckets are in the estimate). The job itself runs under a stand-in
// launcher of the same name: Debian's torchrun (PyTorch 1.13) fails on Python 3.11 before it
// starts a process, and what is tested here is colod's probe, not the launcher.
TEST(ColodProbe, ProbeScriptUnderTorchrunIsRankZerosEstimate) {
  if (const std::string why = cannot_probe_as_nobody(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const std::string work = write_models(dir.path() + "/models", dir.path());
  std::ofstream(work + "/ddp.py") << R"(import os, torch, torch.nn as nn, torch.distributed as dist
cuda = torch.cuda.is_available()
dist.init_process_group("nccl" if cuda else "gloo")
device = f"cuda:{os.environ['LOCAL_RANK']}" if cuda else "cpu"
model = nn.parallel.DistributedDataParallel(nn.Linear(4096, 8192).to(device))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    model(torch.randn(8, 4096, device=device)).sum().backward()
    opt.step()
print("rank", dist.get_rank(), "of", dist.get_world_size())
)";
  std::ofstream(work + "/torchrun") << "#!/bin/sh\n# stand-in: rank 0 of one process (port 0: any free one)\n"
                                      "shift 2\nexec env RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 "
                                      "MASTER_PORT=0 /usr/bin/python3 \"$@\"\n";
  ::chmod((work + "/ddp.py").c_str(), 0644);
  ::chmod((work + "/torchrun").c_str(), 0755);
  ColodProcess d(dir.path(), "2x40GiB");
  const auto [id, j] = submit_probed_as_nobody(
      d, {"submit", "--workdir", work, "--gpus", "2", "--probe-script", "--", work + "/torchrun", "--nproc_per_node", "2",
          "ddp.py"});
  ASSERT_FALSE(j.is_null());
  const json& p = j.at("probe");
  EXPECT_EQ(p.at("request").at("script"), "ddp.py");
  EXPECT_EQ(p.at("request").at("torchrun"), 2);
  EXPECT_EQ(p.at("request").at("data_parallel"), 2);
  EXPECT_EQ(j.at("need_source"), "trace") << j.dump(2);
  // context (~1.4 GiB) + 128 MiB of weights, their gradients and DDP's bucket, and the step
  EXPECT_GT(j.at("need_mib").get<std::int64_t>(), 1400 + 3 * 128);
  EXPECT_LT(j.at("need_mib").get<std::int64_t>(), 2600);
  const RunResult show = d.colo({"show", std::to_string(id)});
  EXPECT_NE(show.out.find("probe      script ddp.py (rank 0 of torchrun's 2) [trace]: done"), std::string::npos) << show.out;
}

TEST(ColodProbe, FailingProbeFallsBackToTheSubmittedMemoryWithItsReason) {
  TempDir dir;
  const std::string models = write_models(dir.path() + "/models", dir.path());
  ColodProcess d(dir.path(), "1x40GiB");
  const std::uint64_t id = d.submit({"--workdir", models, "--probe", "models.py:broken", "--batch", "8", "--input", "64",
                                     "--mem", "2GiB", "--", "/bin/true"});
  const json j = d.wait_terminal(id, 120s);
  EXPECT_EQ(j.at("state"), "done") << j.dump(2);
  EXPECT_EQ(j.at("need_mib"), 2048);
  EXPECT_EQ(j.at("need_source"), "user");
  EXPECT_EQ(j.at("probe").at("status"), "failed");
  EXPECT_NE(j.at("need_explanation").get<std::string>().find("ValueError: this model cannot be built"), std::string::npos)
      << j.dump(2);
  EXPECT_TRUE(has_event(j, "probe-failed"));
}

// A probe package the submitter cannot read (colod run from a build under /root, probing for
// another user) is named in the probe's failure, not left as Python's bare "No module named".
TEST(ColodProbe, AProbePackageTheSubmitterCannotReadIsNamedInTheFailure) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to submit as another user";
  TempDir dir;
  const std::string models = write_models(dir.path() + "/models", dir.path());
  const std::string hidden = dir.path() + "/private";
  std::filesystem::create_directories(hidden);
  ::chmod(hidden.c_str(), 0700);
  std::filesystem::copy(estimate::probe_package_dir() + "/colo_probe", hidden + "/colo_probe",
                        std::filesystem::copy_options::recursive);
  ColodProcess d(dir.path(), "1x40GiB");
  d.stop();
  d.set_env({{"COLO_PROBE_PATH", hidden}});
  d.start();
  const RunResult sub = d.colo({"submit", "--workdir", models, "--probe", "models.py:not_root", "--batch", "8",
                                "--input", "64", "--mem", "2GiB", "--", "/bin/true"},
                               65534);
  ASSERT_EQ(sub.rc, 0) << sub.err;
  const json j = d.wait_terminal(std::stoull(sub.out), 120s);
  EXPECT_EQ(j.at("state"), "done") << j.dump(2);
  EXPECT_EQ(j.at("need_source"), "user");
  EXPECT_EQ(j.at("probe").at("status"), "failed");
  EXPECT_NE(j.at("need_explanation").get<std::string>().find(
                "cannot start the probe: the probe package in " + hidden +
                " is not readable by the user the probe runs as (nobody)"),
            std::string::npos)
      << j.dump(2);
}

// What a probe leaves in the state directory is bounded: one that floods its stderr is killed.
TEST(ColodProbe, AProbeThatFloodsItsStderrIsKilledAndNamedSo) {
  TempDir dir;
  const std::string models = write_models(dir.path() + "/models", dir.path());
  std::ofstream(dir.path() + "/colod.toml") << "[estimator]\nprobe_timeout_s = 3600\n";
  ColodProcess d(dir.path(), "1x40GiB", {"--config", dir.path() + "/colod.toml"});
  const std::uint64_t id = d.submit({"--workdir", models, "--probe", "models.py:spew_and_hang", "--batch", "8",
                                     "--input", "64", "--mem", "2GiB", "--", "/bin/true"});
  const json j = d.wait_terminal(id, 120s);
  EXPECT_EQ(j.at("state"), "done") << j.dump(2);
  EXPECT_EQ(j.at("need_source"), "user");
  EXPECT_EQ(j.at("probe").at("status"), "failed");
  EXPECT_EQ(j.at("probe").at("detail"), "probe of models.py:spew_and_hang wrote more than 64 MiB to its stderr: killed")
      << j.dump(2);
}

TEST(ColodProbe, ProbePastItsDeadlineIsKilledAndTheNeedStaysUnknown) {
  TempDir dir;
  const std::string models = write_models(dir.path() + "/models", dir.path());
  std::ofstream(dir.path() + "/colod.toml") << "[estimator]\nprobe_timeout_s = 2\n";
  ColodProcess d(dir.path(), "1x40GiB", {"--config", dir.path() + "/colod.toml"});
  const std::uint64_t id = d.submit({"--workdir", models, "--probe", "models.py:hang", "--batch", "8", "--input", "64",
                                     "--", "/bin/true"});
  const json j = d.wait_terminal(id, 120s);
  EXPECT_EQ(j.at("state"), "done") << j.dump(2);
  EXPECT_TRUE(j.at("need_mib").is_null());
  EXPECT_EQ(j.at("probe").at("status"), "failed");
  EXPECT_NE(j.at("probe").at("detail").get<std::string>().find("timed out after 2 s"), std::string::npos) << j.dump(2);
  // Killed wherever it was (importing PyTorch, or in the model file): nothing is left running in
  // the job's directory (the job itself, /bin/true, has ended).
  EXPECT_TRUE(wait_until([&] { return processes_in(models) == 0; }, 30s)) << "the timed-out probe is still running";
}

TEST(ColodProbe, CancellingAnEstimatingJobKillsItsProbe) {
  TempDir dir;
  const std::string models = write_models(dir.path() + "/models", dir.path());
  ColodProcess d(dir.path(), "1x40GiB");
  const std::uint64_t id = d.submit({"--workdir", models, "--probe", "models.py:hang", "--batch", "8", "--input", "64",
                                     "--", "/bin/true"});
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(dir.path() + "/hang.pid"); }, 120s));
  const pid_t probe = std::stoi(read_file(dir.path() + "/hang.pid"));
  EXPECT_EQ(d.colo_json({"show", std::to_string(id), "--json"}).at("state"), "estimating");
  ASSERT_EQ(d.colo({"cancel", std::to_string(id)}).rc, 0);
  const json j = d.wait_terminal(id, 60s);
  EXPECT_EQ(j.at("state"), "cancelled");
  EXPECT_EQ(j.at("attempt_count"), 0);
  EXPECT_TRUE(wait_until([&] { return process_gone(probe); }, 30s)) << "the cancelled job's probe is still running";
  EXPECT_TRUE(wait_until([&] { return d.colo_json({"show", std::to_string(id), "--json"}).at("probe").at("status") == "cancelled"; }, 30s));
}

// A job whose probe (models.py:escape_and_hang) detaches a child from its process group and hangs.
std::uint64_t submit_escaping_probe(const ColodProcess& d, const std::string& models) {
  return d.submit({"--workdir", models, "--probe", "models.py:escape_and_hang", "--batch", "8", "--input", "64", "--",
                   "/bin/true"});
}

// The pid the probe's detached child published in `mark` (write_models' MARK), once it has; the
// file is removed so that a later probe's child publishes anew. 0 when none came.
pid_t take_escaped_pid(const std::string& mark) {
  const std::string file = mark + "/escaped.pid";
  if (!wait_until([&] { return std::filesystem::exists(file); }, 120s)) return 0;
  const pid_t pid = std::stoi(read_file(file));
  std::filesystem::remove(file);
  return pid;
}

// What a probe starts outside its process group (setsid) is in the probe's cgroup leaf, where the
// host gives one, and dies with the probe.
TEST(ColodProbe, WhatAProbeDetachedDiesWithIt) {
  if (const std::string why = no_cgroups_here(); !why.empty()) GTEST_SKIP() << "no writable cgroup2 hierarchy here: " << why;
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  const std::uint64_t id = submit_escaping_probe(d, write_models(dir.path() + "/models", dir.path()));
  const pid_t escaped = take_escaped_pid(dir.path());
  ASSERT_GT(escaped, 0);
  const std::string record = dir.path() + "/jobs/" + std::to_string(id) + "/probe.cgroup";
  const std::string leaf = read_file(record);
  EXPECT_NE(leaf.find("/colo-probe-" + std::to_string(id) + "-1-"), std::string::npos) << leaf;
  ASSERT_EQ(d.colo({"cancel", std::to_string(id)}).rc, 0);
  EXPECT_EQ(d.wait_terminal(id, 60s).at("state"), "cancelled");
  EXPECT_TRUE(wait_until([&] { return process_gone(escaped); }, 30s)) << "the probe's detached child still runs";
  if (!process_gone(escaped)) ::kill(escaped, SIGKILL);
  EXPECT_TRUE(wait_until([&] { return !std::filesystem::exists(record); }, 30s)) << "the leaf is removed with the probe";
  EXPECT_FALSE(std::filesystem::exists(leaf.substr(0, leaf.find('\n'))));
}

// colod killed (-9) while a probe runs: the probe dies with it, but what it detached lives on in
// its leaf — until the restarted colod, before it probes the job again, empties the leaf the
// killed run recorded.
TEST(ColodProbe, AKilledColodsProbeLeafIsEmptiedBeforeTheProbeRunsAgain) {
  if (const std::string why = no_cgroups_here(); !why.empty()) GTEST_SKIP() << "no writable cgroup2 hierarchy here: " << why;
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  const std::uint64_t id = submit_escaping_probe(d, write_models(dir.path() + "/models", dir.path()));
  const pid_t first = take_escaped_pid(dir.path());
  ASSERT_GT(first, 0);
  d.kill9();
  EXPECT_FALSE(process_gone(first)) << "detached from the probe, it outlives colod";
  d.start();
  EXPECT_TRUE(wait_until([&] { return process_gone(first); }, 60s)) << "the killed run's leaf was not emptied";
  if (!process_gone(first)) ::kill(first, SIGKILL);
  const pid_t second = take_escaped_pid(dir.path());
  ASSERT_GT(second, 0) << "the probe runs again";
  ASSERT_EQ(d.colo({"cancel", std::to_string(id)}).rc, 0);
  EXPECT_TRUE(wait_until([&] { return process_gone(second); }, 30s));
  if (!process_gone(second)) ::kill(second, SIGKILL);
}

TEST(ColodProbe, KilledDaemonTakesItsProbeAlongAndTheRestartedOneProbesAgain) {
  TempDir dir;
  const std::string models = write_models(dir.path() + "/models", dir.path());
  ColodProcess d(dir.path(), "1x40GiB");
  const std::uint64_t id = d.submit({"--workdir", models, "--probe", "models.py:hang_once", "--batch", "8", "--input", "64",
                                     "--", "/bin/true"});
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(dir.path() + "/first.pid"); }, 120s));
  const pid_t first = std::stoi(read_file(dir.path() + "/first.pid"));
  d.kill9();
  EXPECT_TRUE(wait_until([&] { return process_gone(first); }, 30s)) << "the probe outlived colod";
  d.start();
  const json j = d.wait_terminal(id, 120s);
  EXPECT_EQ(j.at("state"), "done") << j.dump(2);
  EXPECT_EQ(j.at("need_source"), "trace");
  EXPECT_EQ(j.at("probe").at("runs"), 2);
  EXPECT_EQ(j.at("attempt_count"), 1);  // the job itself ran once
}

// A graceful stop of colod (SIGTERM: an upgrade, a config change) is not a probe failure: the
// probe is stopped with colod and starts again after the restart without counting, so three
// restarts do not make the job give up its estimate (only starts that a crash cut short count).
TEST(ColodProbe, GracefulRestartsDoNotCountAgainstTheProbe) {
  TempDir dir;
  const std::string models = write_models(dir.path() + "/models", dir.path());
  const std::string pid_file = dir.path() + "/hang.pid";
  ColodProcess d(dir.path(), "1x40GiB");
  const std::uint64_t id = d.submit({"--workdir", models, "--probe", "models.py:hang", "--batch", "8", "--input", "64",
                                     "--", "/bin/true"});
  for (int restart = 0; restart < 3; ++restart) {
    ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(pid_file); }, 120s)) << restart;
    const pid_t probe = std::stoi(read_file(pid_file));
    d.stop();
    EXPECT_TRUE(wait_until([&] { return process_gone(probe); }, 30s)) << "the probe outlived a stopped colod";
    std::filesystem::remove(pid_file);
    d.start();
  }
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(pid_file); }, 120s));
  const json j = d.colo_json({"show", std::to_string(id), "--json"});
  EXPECT_EQ(j.at("state"), "estimating") << j.dump(2);
  EXPECT_EQ(j.at("probe").at("runs"), 1) << j.dump(2);
  ASSERT_EQ(d.colo({"cancel", std::to_string(id)}).rc, 0);
  d.wait_terminal(id, 60s);
}

TEST(ColodProbe, BadProbeRequestsAreRefusedBeforeAnythingIsQueued) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  RunResult r = d.colo({"submit", "--probe", "torchvision:resnet18", "--", "/bin/true"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--probe needs --batch"), std::string::npos) << r.err;
  r = d.colo({"submit", "--probe", "torchvision:resnet18", "--batch", "8", "--estimate", "allocsim", "--", "/bin/true"});
  EXPECT_NE(r.err.find("--estimate 'allocsim' does not use --probe"), std::string::npos) << r.err;
  r = d.colo({"submit", "--probe", "torchvision:resnet18", "--batch", "8", "--amp", "fp8", "--", "/bin/true"});
  EXPECT_NE(r.err.find("--amp 'fp8'"), std::string::npos) << r.err;
  EXPECT_TRUE(json::parse(d.colo({"queue", "--all", "--json"}).out).empty());
}

}  // namespace
}  // namespace colo::daemon::testing
