// Parsing of what users hand to `colo submit`: memory sizes, .rad files (all the prototype's
// real ones), TOML job files, API request bodies; and OOM log patterns.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/error.h"
#include "daemon/client/job_file.h"
#include "daemon/client/job_request.h"
#include "daemon/client/rad_file.h"
#include "daemon/config.h"
#include "daemon/history_estimator.h"
#include "daemon/oom_detector.h"

namespace colo::daemon {
namespace {

namespace fs = std::filesystem;

TEST(ParseMemory, UnitsAndErrors) {
  EXPECT_EQ(parse_memory("12GiB"), 12288);
  EXPECT_EQ(parse_memory("512MiB"), 512);
  EXPECT_EQ(parse_memory("1.5GiB"), 1536);
  EXPECT_EQ(parse_memory("4096"), 4096);
  EXPECT_EQ(parse_memory("40GB"), 38147);
  EXPECT_THROW(parse_memory("12 parsecs"), UserError);
  EXPECT_THROW(parse_memory("GiB"), UserError);
  EXPECT_THROW(parse_memory("0MiB"), UserError);
}

TEST(RadFile, EveryPrototypeFileParses) {
  const fs::path dir = fs::path(COLO_SOURCE_DIR) / ".." / "shared" / "data" / "carma" / "rad";
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".rad") continue;
    const RadJob r = parse_rad_file(e.path().string());
    EXPECT_FALSE(r.command.empty()) << e.path();
    EXPECT_GE(r.batch, 1);
    EXPECT_GE(r.gpus, 1);
    EXPECT_TRUE(fs::exists(r.summary_path)) << r.summary_path;
    ++n;
  }
  EXPECT_GE(n, 40);
  const RadJob bert = parse_rad_file((dir / "BERT_base.rad").string());
  EXPECT_EQ(bert.command, "python /home/ehyo/rad-scheduler/workloads/BERT_base_on_wiki.py");
  EXPECT_EQ(bert.batch, 32);
  EXPECT_EQ(bert.measured_mib, 20774);
  EXPECT_EQ(bert.horus_mib, 17457);  // 17456.9336 rounded up
  EXPECT_EQ(bert.gpumemnet_mib, 32000);
  const RadJob gpt = parse_rad_file((dir / "gpt2_xl.rad").string());
  EXPECT_FALSE(gpt.measured_mib.has_value());
  EXPECT_EQ(parse_rad_file((dir / "xlnet_base_cased_2.rad").string()).gpus, 2);
}

TEST(JobFile, ParsesEveryKey) {
  const fs::path dir = fs::temp_directory_path() / "colo-jobfile-test";
  fs::create_directories(dir);
  const std::string path = (dir / "j.toml").string();
  std::ofstream(path) << "name = \"r50\"\ncommand = [\"python\", \"train.py\"]\ngpus = 2\nworkdir = \"sub\"\n"
                         "[env]\nA = \"1\"\n[estimate]\nestimator = \"horus\"\nsummary = \"m.model\"\nbatch = 64\n"
                         "optimizer = \"sgd\"\n";
  const JobFile jf = parse_job_file(path);
  EXPECT_EQ(jf.request.name, "r50");
  EXPECT_EQ(jf.request.argv, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_EQ(jf.request.gpus, 2);
  EXPECT_EQ(jf.request.workdir, (dir / "sub").string());
  EXPECT_EQ(jf.request.env.at("A"), "1");
  ASSERT_TRUE(jf.estimate);
  EXPECT_EQ(jf.estimate->summary, (dir / "m.model").string());
  EXPECT_EQ(jf.estimate->batch, 64);
  std::ofstream(path) << "command = \"x\"\n[estimate]\nsummary = \"m\"\nbatch = 1\nbogus = 2\n";
  try {
    parse_job_file(path);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), path + ":5: unknown key 'estimate.bogus'");
  }
  fs::remove_all(dir);
}

TEST(SubmitRequestJson, RoundTripsAndValidates) {
  SubmitRequest r;
  r.argv = {"/bin/echo", "hi"};
  r.gpus = 2;
  r.mem_mib = 1000;
  r.env["X"] = "y";
  r.workdir = "/tmp";
  const SubmitRequest back = submit_request_from_json(to_json(r));
  EXPECT_EQ(back.argv, r.argv);
  EXPECT_EQ(back.gpus, 2);
  EXPECT_EQ(back.mem_mib, 1000);
  EXPECT_EQ(back.name, "echo");
  EXPECT_THROW(submit_request_from_json(nlohmann::json{{"argv", {"x"}}, {"workdir", "relative"}}), UserError);
  EXPECT_THROW(submit_request_from_json(nlohmann::json{{"argv", {"x"}}, {"env", {{"COLO_JOB_ID", "1"}}}}), UserError);
  EXPECT_THROW(submit_request_from_json(nlohmann::json{{"argv", nlohmann::json::array()}}), UserError);
}

TEST(OomDetector, RecognisesEachFramework) {
  EXPECT_EQ(find_oom("Traceback...\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")->framework, "pytorch");
  EXPECT_EQ(find_oom("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate")->framework, "cublas");
  EXPECT_EQ(find_oom("cuDNN error: CUDNN_STATUS_ALLOC_FAILED")->framework, "cudnn");
  EXPECT_EQ(find_oom("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor")->framework, "tensorflow");
  EXPECT_EQ(find_oom("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate")->framework,
            "tensorflow/jax");
  EXPECT_FALSE(find_oom("ValueError: shapes do not match\n"));
  const auto e = find_oom("a\nb CUDA out of memory c\nd");
  EXPECT_EQ(e->line, "b CUDA out of memory c");
}

TEST(HistoryFingerprint, DependsOnUserDirectoryCommandAndInputsOnly) {
  const auto a = job_fingerprint(1000, "/home/a", {"python", "t.py"}, 1, {{"batch", 32}});
  EXPECT_EQ(a, job_fingerprint(1000, "/home/a", {"python", "t.py"}, 1, {{"batch", 32}}));
  EXPECT_NE(a, job_fingerprint(1000, "/home/a", {"python", "t.py"}, 1, {{"batch", 64}}));
  EXPECT_NE(a, job_fingerprint(1000, "/home/a", {"python", "t.py"}, 2, {{"batch", 32}}));
  EXPECT_NE(a, job_fingerprint(1000, "/home/a", {"python", "u.py"}, 1, {{"batch", 32}}));
  // Another user's identical run, or the same command in another directory, is another job.
  EXPECT_NE(a, job_fingerprint(1001, "/home/a", {"python", "t.py"}, 1, {{"batch", 32}}));
  EXPECT_NE(a, job_fingerprint(1000, "/home/b", {"python", "t.py"}, 1, {{"batch", 32}}));
  EXPECT_EQ(a.rfind("u1000-", 0), 0u);
}

TEST(DaemonConfig, ExampleConfigLoadsAndErrorsNameTheLine) {
  const DaemonConfig c = load_config(std::string(COLO_SOURCE_DIR) + "/packaging/colod.toml");
  EXPECT_EQ(c.policy, PolicyKind::Magm);
  EXPECT_EQ(c.sharing, Sharing::Streams);
  EXPECT_EQ(c.conditions.margin_mib, 2048);
  const std::string path = (fs::temp_directory_path() / "colod-bad.toml").string();
  std::ofstream(path) << "[policy]\nname = \"magm\"\nsmact_cap = 3\n";
  try {
    load_config(path);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), path + ":3: 'policy.smact_cap' must be in [0, 1]");
  }
  std::ofstream(path) << "[sharing]\nmode = \"mig\"\n";
  EXPECT_THROW(load_config(path), UserError);
  std::ofstream(path) << "[polcy]\nname = \"magm\"\n";
  EXPECT_THROW(load_config(path), UserError);
  fs::remove(path);
}

}  // namespace
}  // namespace colo::daemon
