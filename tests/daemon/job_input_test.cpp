// Parsing of what users hand to `colo submit`: memory sizes, .rad files (all the prototype's
// real ones), TOML job files, API request bodies; and OOM log patterns.
#include <csignal>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/limits.h"
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
  const fs::path dir = fs::path(COLO_SOURCE_DIR) / "data" / "carma" / "rad";
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
  fs::create_directories(dir / "sub");
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
  // A working directory that does not exist: named with its line, for the submitter to refuse
  // (tests/cli: unless --workdir replaces it), not found only at launch.
  std::ofstream(path) << "command = \"x\"\nworkdir = \"gone\"\n";
  EXPECT_EQ(parse_job_file(path).workdir_problem, path + ":2: workdir '" + (dir / "gone").string() + "' is not a directory");
  std::ofstream(path) << "command = \"x\"\n[estimate]\nsummary = \"m\"\nbatch = 1\nbogus = 2\n";
  try {
    parse_job_file(path);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), path + ":5: unknown key 'estimate.bogus'");
  }
  fs::remove_all(dir);
}

// Bad values in a job file: one line, the location once, the same memory limit as --mem.
TEST(JobFile, BadValuesAreOneLineErrorsWithTheLocationOnce) {
  const fs::path dir = fs::temp_directory_path() / "colo-jobfile-bad-test";
  fs::create_directories(dir);
  const std::string path = (dir / "j.toml").string();
  auto error_for = [&](const std::string& text) -> std::string {
    std::ofstream(path) << text;
    try {
      parse_job_file(path);
    } catch (const UserError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_EQ(error_for("command = \"x\"\nmem = 12\n"), path + ":2: 'mem' must be a string");
  EXPECT_EQ(error_for("command = \"x\"\nmem = \"2TiB\"\n").rfind(path + ":2: memory '2TiB' is out of range", 0), 0u)
      << error_for("command = \"x\"\nmem = \"2TiB\"\n");
  EXPECT_EQ(error_for("command = \"\"\n"), path + ":1: 'command' is empty");
  EXPECT_EQ(error_for("command = \"  \"\n"), path + ":1: 'command' is empty");
  EXPECT_EQ(error_for("command = [\"\", \"a\"]\n"), path + ":1: 'command' starts with an empty program name");
  EXPECT_EQ(error_for("command = \"x\"\nmem = \"1TiB\"\n"), "(accepted)");
  // [estimate]'s names are checked where they are written.
  EXPECT_EQ(error_for("command = \"x\"\n[estimate]\nsummary = \"s\"\nbatch = 2\noptimizer = \"lamb\"\n").rfind(
                path + ":5: unknown optimizer 'lamb'", 0),
            0u);
  EXPECT_EQ(error_for("command = \"x\"\n[estimate]\nsummary = \"s\"\nbatch = 2\nestimator = \"magic\"\n").rfind(
                path + ":5: unknown estimator 'magic'", 0),
            0u);
  fs::remove_all(dir);
}

// The error submit_request_from_json gives for `j`, or "(accepted)".
std::string submit_error(const nlohmann::json& j) {
  try {
    submit_request_from_json(j);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(accepted)";
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
  EXPECT_FALSE(back.checkpoint);
  r.checkpoint = true;
  EXPECT_TRUE(submit_request_from_json(to_json(r)).checkpoint);
  try {
    submit_request_from_json(nlohmann::json{{"argv", {"x"}}, {"checkpoint", "yes"}});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "field 'checkpoint': expected true or false");
  }
  EXPECT_THROW(submit_request_from_json(nlohmann::json{{"argv", {"x"}}, {"env", {{"COLO_CHECKPOINT_FILE", "/x"}}}}),
               UserError);
  r.smact = 0.35;
  r.smact_source = "gpumemnet-activity";
  const SubmitRequest s = submit_request_from_json(to_json(r));
  EXPECT_DOUBLE_EQ(*s.smact, 0.35);
  EXPECT_EQ(s.smact_source, "gpumemnet-activity");
  for (const nlohmann::json& bad : {nlohmann::json{{"argv", {"x"}}, {"smact", 1.5}},
                                    nlohmann::json{{"argv", {"x"}}, {"smact", "high"}},
                                    nlohmann::json{{"argv", {"x"}}, {"smact_source", "user"}}}) {
    try {
      submit_request_from_json(bad);
      ADD_FAILURE() << bad.dump();
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("field 'smact", 0), 0u) << e.what();
    }
  }
  // The submitter's umask travels with the job; only a file mode mask is one.
  EXPECT_FALSE(submit_request_from_json(to_json(r)).umask.has_value());
  r.umask = 027;
  EXPECT_EQ(submit_request_from_json(to_json(r)).umask, 027);
  for (const nlohmann::json& bad : {nlohmann::json{{"argv", {"x"}}, {"umask", 512}},
                                    nlohmann::json{{"argv", {"x"}}, {"umask", -1}},
                                    nlohmann::json{{"argv", {"x"}}, {"umask", "022"}}}) {
    try {
      submit_request_from_json(bad);
      ADD_FAILURE() << bad.dump();
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), "field 'umask': expected an integer in 0..511 (0..0777 octal)");
    }
  }
}

// colo submit --probe: the probe request travels to colod and is checked there as strictly.
TEST(SubmitRequestJson, ProbeRequestRoundTripsAndBadOnesAreRefusedByName) {
  SubmitRequest r;
  r.argv = {"/bin/true"};
  estimate::ProbeRequest p;
  p.model = "torchvision:resnet50";
  p.batch = 128;
  p.optimizer = "adamw";
  p.amp = "bf16";
  p.checkpointing = true;
  r.probe = p;
  r.probe_estimator = "faketensor";
  const SubmitRequest back = submit_request_from_json(to_json(r));
  ASSERT_TRUE(back.probe);
  EXPECT_EQ(back.probe->to_json(), p.to_json());
  EXPECT_EQ(back.probe_estimator, "faketensor");
  estimate::ProbeRequest torchrun;  // a script under torchrun keeps its process count
  torchrun.script = "train.py";
  torchrun.script_args = {"--batch", "8"};
  torchrun.data_parallel = 4;
  torchrun.torchrun = 4;
  r.probe = torchrun;
  const SubmitRequest back_torchrun = submit_request_from_json(to_json(r));
  ASSERT_TRUE(back_torchrun.probe);
  EXPECT_EQ(back_torchrun.probe->torchrun, 4);
  EXPECT_EQ(back_torchrun.probe->arguments(),
            (std::vector<std::string>{"--gpus", "4", "--torchrun", "4", "--script", "train.py", "--batch", "8"}));
  torchrun.python = "/opt/venv/bin/python3.11";  // the job's own interpreter runs the probe
  r.probe = torchrun;
  EXPECT_EQ(submit_request_from_json(to_json(r)).probe->python, "/opt/venv/bin/python3.11");
  const auto error_for = submit_error;
  const nlohmann::json base = {{"argv", {"/bin/true"}}};
  nlohmann::json j = base;
  j["probe"] = {{"model", "torchvision:resnet50"}, {"batch", 8}, {"shell", "rm -rf /"}};
  EXPECT_EQ(error_for(j), "field 'probe': unknown probe field 'shell'");
  j["probe"] = {{"model", "torchvision:resnet50"}, {"batch", "8"}};
  EXPECT_EQ(error_for(j), "field 'probe': probe field 'batch': expected an integer");
  // Fractions are not truncated, huge numbers not converted into something else.
  j["probe"] = {{"model", "torchvision:resnet50"}, {"batch", 2.7}};
  EXPECT_EQ(error_for(j), "field 'probe': probe field 'batch': expected an integer");
  j["probe"] = {{"model", "torchvision:resnet50"}, {"batch", 8}, {"num_classes", 10.9}};
  EXPECT_EQ(error_for(j), "field 'probe': probe field 'num_classes': expected an integer");
  j["probe"] = {{"model", "torchvision:resnet50"}, {"batch", 1e300}};
  EXPECT_EQ(error_for(j), "field 'probe': probe field 'batch': expected an integer");
  j["probe"] = {{"model", "torchvision:resnet50"}, {"batch", 18446744073709551615ULL}};
  EXPECT_EQ(error_for(j), "field 'probe': probe field 'batch' is too large");
  j["probe"] = {{"script", "train.py"}, {"data_parallel", 1.9}};
  EXPECT_EQ(error_for(j), "field 'probe': probe field 'data_parallel': expected an integer");
  // torchrun: a script's, at most one process per GPU
  j["probe"] = {{"script", "train.py"}, {"data_parallel", 2}, {"torchrun", 4}};
  EXPECT_THAT(error_for(j), ::testing::HasSubstr("--nproc-per-node 4: torchrun starts one process per GPU, and the job has 2 GPU(s)"));
  j["probe"] = {{"script", "train.py"}, {"data_parallel", 2}, {"torchrun", -1}};
  EXPECT_THAT(error_for(j), ::testing::HasSubstr("--nproc-per-node -1 is out of range"));
  j["probe"] = {{"model", "torchvision:resnet50"}, {"batch", 8}, {"torchrun", 2}};
  EXPECT_EQ(error_for(j), "field 'probe': probe field 'torchrun' goes with 'script'");
  // python: a script's, and a Python interpreter by name
  j["probe"] = {{"script", "train.py"}, {"python", "/bin/sh"}};
  EXPECT_THAT(error_for(j), ::testing::HasSubstr("--python '/bin/sh': not a Python interpreter"));
  j["probe"] = {{"script", "train.py"}, {"python", 3}};
  EXPECT_THAT(error_for(j), ::testing::HasSubstr("malformed probe request"));
  j["probe"] = {{"model", "torchvision:resnet50"}, {"batch", 8}, {"python", "python3"}};
  EXPECT_EQ(error_for(j), "field 'probe': probe field 'python' goes with 'script'");
  j["probe"] = {{"model", "torchvision:resnet50"}, {"batch", 0}};
  EXPECT_THAT(error_for(j), ::testing::HasSubstr("field 'probe': --batch 0 is out of range"));
  j["probe"] = {{"model", "torchvision:resnet50"}, {"batch", 8}, {"optimizer", "lion"}};
  EXPECT_THAT(error_for(j), ::testing::HasSubstr("--optimizer 'lion'"));
  j = base;
  j["probe_estimator"] = "trace";
  EXPECT_THAT(error_for(j), ::testing::HasSubstr("given without 'probe'"));
  j["probe"] = {{"model", "torchvision:resnet50"}, {"batch", 8}};
  j["probe_estimator"] = "allocsim";
  EXPECT_THAT(error_for(j), ::testing::HasSubstr("expected 'trace' or 'faketensor'"));
}

// What colo prints on one line (names, sources, explanations) holds no control characters: a
// newline would forge rows in `colo queue`, an ESC or a C1 CSI drive the reader's terminal.
TEST(SubmitRequestJson, RefusesControlCharactersAndClaimsOfHistory) {
  const auto error_for = submit_error;
  const nlohmann::json base = {{"argv", {"/bin/true"}}};
  nlohmann::json j = base;
  j["name"] = "a\nb";
  EXPECT_EQ(error_for(j), "field 'name': contains a control character (\\n)");
  j["name"] = "red\u001b[31m";
  EXPECT_EQ(error_for(j), "field 'name': contains a control character (\\x1b)");
  j["name"] = "csi\u009b31m";
  EXPECT_EQ(error_for(j), "field 'name': contains a control character (\\u009b)");
  j["name"] = "tab\there";
  EXPECT_EQ(error_for(j), "field 'name': contains a control character (\\t)");
  j["name"] = std::string(150, 'x') + "\u00e9\u00e9";  // UTF-8 is fine, the limit is in bytes
  EXPECT_EQ(error_for(j), "(accepted)");
  j["name"] = std::string(201, 'x');
  EXPECT_EQ(error_for(j), "field 'name': longer than 200 bytes");
  j = base;
  j["mem_mib"] = 1024;
  j["mem_explanation"] = "line one\rline two";
  EXPECT_EQ(error_for(j), "field 'mem_explanation': contains a control character (\\r)");
  j.erase("mem_explanation");
  j["mem_source"] = "my estimate <b>";
  EXPECT_EQ(submit_error(j),
            "field 'mem_source': expected a short label (letters, digits and :_.()+-, at most 64), e.g. 'user' or 'allocsim'");
  j["mem_source"] = "auto(allocsim)";
  EXPECT_EQ(submit_error(j), "(accepted)");
  j["mem_source"] = "history";
  EXPECT_EQ(error_for(j), "field 'mem_source': 'history' is set by colod (measured runs), not by a client");
  // A name taken from the program's path follows the same rules, escaped and cut at 200 bytes.
  j = {{"argv", {"/tmp/\u001b[31mred"}}};
  EXPECT_EQ(submit_request_from_json(j).name, "\\x1b[31mred");
  j = {{"argv", {"/nonexistent/" + std::string(300, 'A')}}};
  EXPECT_EQ(submit_request_from_json(j).name, std::string(200, 'A'));
  j = {{"argv", {"/usr/bin/"}}};
  EXPECT_EQ(submit_request_from_json(j).name, "job");
  j = base;
  j["smact"] = 0.5;
  j["smact_source"] = "history";
  EXPECT_EQ(error_for(j), "field 'smact_source': 'history' is set by colod (measured runs), not by a client");
}

// nlohmann stops at a NUL byte: what follows it must not be silently dropped.
TEST(SubmitRequestJson, RefusesANulByteInTheBody) {
  const std::string body = std::string(R"({"argv":["true"]})") + '\0' + " garbage {{{";
  try {
    parse_request_body(body);
    FAIL() << "accepted";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "request body: a NUL byte at offset 17 (not JSON)");
  }
}

// nlohmann keeps the last of two equal keys; a request body must not say two things at once.
TEST(SubmitRequestJson, RefusesDuplicateKeysAtAnyDepth) {
  auto error_for = [](const std::string& body) -> std::string {
    try {
      const nlohmann::json j = parse_request_body(body);
      return j.is_discarded() ? "(not JSON)" : "(accepted)";
    } catch (const UserError& e) {
      return e.what();
    }
  };
  EXPECT_EQ(error_for(R"({"argv": ["/bin/true"], "argv": ["/bin/rm", "-rf", "/"]})"), "request body: duplicate key 'argv'");
  EXPECT_EQ(error_for(R"({"argv": ["x"], "env": {"A": "1", "A": "2"}})"), "request body: duplicate key 'A'");
  EXPECT_EQ(error_for("{\"a\\nb\": 1, \"a\\nb\": 2}"), "request body: duplicate key 'a\\nb'");
  // The same key in sibling objects is fine, as is valid JSON in general.
  EXPECT_EQ(error_for(R"({"argv": ["x"], "env": {"argv": "1"}, "fingerprint_inputs": {"a": {"b": 1}, "b": {"b": 2}}})"),
            "(accepted)");
  EXPECT_EQ(error_for(R"({"argv": )"), "(not JSON)");
}

// One limit for memory everywhere: --mem, job files, the API's mem_mib (limits::kMaxGpuMiB).
TEST(SubmitRequestJson, MemoryStopsAtOneGpu) {
  EXPECT_EQ(parse_memory("1TiB"), limits::kMaxGpuMiB);
  EXPECT_THROW(parse_memory("2TiB"), UserError);
  EXPECT_THROW(parse_memory(""), UserError);
  EXPECT_EQ(submit_request_from_json(nlohmann::json{{"argv", {"x"}}, {"mem_mib", limits::kMaxGpuMiB}}).mem_mib,
            limits::kMaxGpuMiB);
  EXPECT_THROW(submit_request_from_json(nlohmann::json{{"argv", {"x"}}, {"mem_mib", 2097152}}), UserError);
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
  EXPECT_EQ(c.policy, "magm");
  EXPECT_EQ(c.sharing, Sharing::Streams);
  EXPECT_EQ(c.conditions.margin_mib, 2048);
  EXPECT_EQ(c.max_log_mib, 1024);
  EXPECT_EQ(c.keep_logs, 30 * 86400.0);
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

// Each bad value is refused with one line naming the file, the line and the key.
TEST(DaemonConfig, RefusesNanFractionsZeroStepHugeMemoryAndDirectories) {
  const std::string path = (fs::temp_directory_path() / "colod-bad-values.toml").string();
  auto error_for = [&](const std::string& text) -> std::string {
    std::ofstream(path) << text;
    try {
      load_config(path);
    } catch (const UserError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_EQ(error_for("[policy]\nsmact_cap = nan\n"), path + ":2: 'policy.smact_cap' must be in [0, 1]");
  EXPECT_EQ(error_for("[estimator]\nhistory_margin = -nan\n"), path + ":2: 'estimator.history_margin' must be in [0, 10]");
  EXPECT_EQ(error_for("[recovery]\nmax_attempts = 2.5\n"), path + ":2: 'recovery.max_attempts' must be a whole number, not 2.5");
  EXPECT_EQ(error_for("[recovery]\nstep = 0\n"), path + ":2: 'recovery.step' must be in [1, 1048576] MiB");
  EXPECT_EQ(error_for("[policy]\nmargin = 9223372036854775807\n"), path + ":2: 'policy.margin' must be in [0, 1048576] MiB");
  EXPECT_EQ(error_for("[policy]\nmargin = \"2TiB\"\n").rfind(path + ":2: policy.margin: memory '2TiB'", 0), 0u);
  EXPECT_EQ(error_for("[recovery]\nstep = \"0MiB\"\n").rfind(path + ":2: recovery.step: memory '0MiB'", 0), 0u);
  EXPECT_EQ(error_for("[policy]\nmargin = 0\n[recovery]\nmax_attempts = 3.0\nstep = \"1GiB\"\n"), "(accepted)");
  EXPECT_EQ(error_for("[policy]\nfloor = \"sometimes\"\n"),
            path + ":2: 'policy.floor' must be \"unknown\" or \"always\", not 'sometimes'");
  EXPECT_EQ(error_for("[policy]\nfloor = \"always\"\n"), "(accepted)");
  EXPECT_TRUE(load_config(path).conditions.floor_always);
  EXPECT_EQ(error_for("[policy]\ninterference = 1.5\n"), path + ":2: 'policy.interference' must be in [0, 1]");
  EXPECT_EQ(error_for("[policy]\nadds_progress = \"yes\"\n").rfind(path + ":2: 'policy.adds_progress'", 0), 0u);
  EXPECT_EQ(error_for("[policy]\nadds_progress = true\ninterference = 0.1\n"), "(accepted)");
  EXPECT_TRUE(load_config(path).conditions.adds_progress);
  EXPECT_DOUBLE_EQ(load_config(path).conditions.interference, 0.1);
  // A rule that could not apply is refused, not ignored.
  EXPECT_EQ(error_for("[policy]\nadds_progress = true\nconditions = false\n"),
            path + ": [policy] adds_progress = true weighs co-runners; conditions = false has none");
  EXPECT_EQ(error_for("[policy]\nname = \"exclusive\"\nadds_progress = true\n"),
            path + ": [policy] adds_progress = true weighs co-runners; policy 'exclusive' places whole GPUs");
  // node-weight ranks Slurm nodes: on colod's one server it would not rank anything.
  EXPECT_EQ(error_for("[policy]\nname = \"node-weight\"\n"),
            path + ": policy 'node-weight' ranks Slurm nodes by their GPUs (colo slurm node-weight); colod places jobs "
                   "on one server, whose GPUs all share its rank: use magm, first-fit or best-fit");
  EXPECT_EQ(error_for("[slots]\nlength_s = 3600\nnotice_s = 3600\n"),
            path + ": [slots] length_s = 3600, notice_s = 3600: the checkpoint notice must be shorter than the slot");
  EXPECT_EQ(error_for("[slots]\nlength_s = -1\n"), path + ":2: 'slots.length_s' must be in [0, 31622400]");
  EXPECT_EQ(error_for("[slots]\nsignal = \"KILL\"\n"),
            path + ":2: 'slots.signal' must be USR1, USR2, INT or HUP, not 'KILL'");
  std::ofstream(path) << "[slots]\nlength_s = 43200\nnotice_s = 600\nsignal = \"SIGUSR2\"\n";
  EXPECT_EQ(load_config(path).slots.slot_s, 43200);
  EXPECT_EQ(load_config(path).checkpoint_signal, SIGUSR2);
  EXPECT_EQ(load_config(path).slots.min_run_s, 60);  // the default
  EXPECT_EQ(error_for("[slots]\nmin_run_s = -5\n"), path + ":2: 'slots.min_run_s' must be in [0, 31622400]");
  EXPECT_EQ(error_for("[sharing]\nmps_control = \"\"\n"),
            path + ":2: 'sharing.mps_control' is empty (the MPS control program, default nvidia-cuda-mps-control)");
  // [gpus] and [paths]: what would only fail after GPU discovery, or silently mean something else.
  EXPECT_EQ(error_for("[gpus]\nmanaged = []\n"), path + ":2: 'gpus.managed' is empty (leave it out to manage every GPU)");
  EXPECT_EQ(error_for("[gpus]\nmanaged = [0, 0]\n"), path + ":2: 'gpus.managed' lists '0' twice");
  EXPECT_EQ(error_for("[gpus]\nmanaged = [-1]\n"), path + ":2: 'gpus.managed' indices are NVML indices, 0..1023");
  EXPECT_THAT(error_for("[gpus]\nfake = \"banana\"\n"), ::testing::StartsWith(path + ":2: fake GPU spec 'banana'"));
  EXPECT_EQ(error_for("[gpus]\nfake = \"2x40GiB\"\nmanaged = [1, \"GPU-x\"]\n"), "(accepted)");
  EXPECT_THAT(error_for("[paths]\nsocket = \"/" + std::string(200, 's') + "\"\n"),
              ::testing::StartsWith(path + ":2: 'paths.socket': 201 bytes long; a Unix socket path holds at most 107"));
  EXPECT_EQ(error_for("[sampling]\ninterval_s = 60\nwindow_s = 1\n"),
            path + ": [sampling] window_s = 1 is shorter than interval_s = 60");
  EXPECT_EQ(error_for("[bogus]\n"), path + ":1: unknown section [bogus]");
  EXPECT_EQ(error_for("[policy]\nbackfill = -1\n"), path + ":2: 'policy.backfill' must be in [0, 1000000]");
  EXPECT_EQ(error_for("[policy]\nbackfill_depth = 0\n"), path + ":2: 'policy.backfill_depth' must be in [1, 1000000]");
  std::ofstream(path) << "[policy]\nbackfill = 3\nbackfill_depth = 50\n";
  EXPECT_EQ(load_config(path).backfill.max_overtakes, 3);
  EXPECT_EQ(load_config(path).backfill.depth, 50);
  // Site policies: defined anywhere in the file, named by [policy] name.
  std::ofstream(path) << "[policy]\nname = \"blend\"\n[policies.blend]\nfilters = [\"fits_memory\"]\n"
                         "scorers = { most_free_mem = 0.7, least_smact = 0.3 }\n";
  const DaemonConfig site = load_config(path);
  EXPECT_EQ(site.policy, "blend");
  ASSERT_EQ(site.policies.size(), 1u);
  EXPECT_EQ(site.policies[0].scorers.size(), 2u);
  EXPECT_EQ(error_for("[policy]\nname = \"nope\"\n").rfind(path + ":2: 'policy.name': unknown policy 'nope'", 0), 0u);
  EXPECT_EQ(error_for("[policies.magm]\nscorers = { first = 1 }\n"),
            path + ":1: 'policies.magm': 'magm' is a shipped policy; give yours another name");
  EXPECT_EQ(error_for("[policies.x]\nfilters = [\"fits\"]\nscorers = { first = 1 }\n").rfind(path + ":1:", 0), 0u);
  EXPECT_EQ(error_for("[policies.x]\nfilters = []\n"), path + ":1: 'policies.x' needs scorers = { NAME = WEIGHT, ... }");
  fs::remove(path);
  const std::string dir = (fs::temp_directory_path() / "colod-config-dir").string();
  fs::create_directories(dir);
  try {
    load_config(dir);
    ADD_FAILURE() << "a directory was accepted as a config file";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), dir + ": is a directory, not a config file");
  }
  fs::remove(dir);
}

}  // namespace
}  // namespace colo::daemon

namespace colo::daemon {
namespace {

// estimator.probe_gpu names a profile; the measured workspace table it names is read (and checked)
// when the configuration loads, not at each job's estimate.
TEST(DaemonConfig, ProbeGpuProfileAndItsWorkspaceTableAreCheckedAtLoad) {
  const std::string path = (fs::temp_directory_path() / "colod-probe-gpu.toml").string();
  std::ofstream(path) << "[estimator]\nprobe_gpu = \"h100-80gb\"\n";
  EXPECT_EQ(load_config(path).probe_gpu, "h100-80gb");
  const std::string dir = (fs::temp_directory_path() / "colod-probe-gpu-profiles").string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/broken.json") << R"({"gpu":"broken","gpu_total_mib":1000,"context_mib":1,"conv_workspace_table":"broken.tsv"})";
  std::ofstream(dir + "/broken.tsv") << "colo-conv-workspace 1\nH {}\nk\to +5\n";
  ::setenv("COLO_CALIBRATION_DIR", dir.c_str(), 1);
  std::ofstream(path) << "[estimator]\nprobe_gpu = \"broken\"\n";
  try {
    load_config(path);
    ADD_FAILURE();
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), path + ":2: 'estimator.probe_gpu': " + dir +
                                         "/broken.tsv:3: transient 0 is never freed (an allocation the convolution "
                                         "keeps is an output: 'o')");
  }
  ::unsetenv("COLO_CALIBRATION_DIR");
  fs::remove_all(dir);
  fs::remove(path);
}

TEST(DaemonConfig, ProbePythonIsTheJobsOrAnInterpreterThatExists) {
  const std::string path = (fs::temp_directory_path() / "colod-probe-python.toml").string();
  EXPECT_EQ(DaemonConfig{}.probe_python, "job");
  std::ofstream(path) << "[estimator]\nprobe_python = \"/usr/bin/python3\"\n";
  EXPECT_EQ(load_config(path).probe_python, "/usr/bin/python3");
  for (const char* bad : {"python3", "/nonexistent/python3", ""}) {
    std::ofstream(path) << "[estimator]\nprobe_python = \"" << bad << "\"\n";
    try {
      load_config(path);
      ADD_FAILURE() << bad;
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), path + ":2: 'estimator.probe_python' must be 'job' or the absolute path of a "
                                              "Python interpreter; '" + bad + "' is neither");
    }
  }
  fs::remove(path);
}

}  // namespace
}  // namespace colo::daemon
