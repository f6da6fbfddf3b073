// `colo submit`'s flags → SubmitRequest, without a daemon (cli/submit_options.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/submit_options.h"
#include "core/error.h"

namespace colo::cli {
namespace {

using ::testing::HasSubstr;

// Parses `colo submit ARGS…` into fresh options; throws what parsing throws.
SubmitOptions parse(std::vector<std::string> args) {
  SubmitOptions o;
  CLI::App app;
  CLI::App* c = app.add_subcommand("submit");
  add_submit_options(c, o);
  args.insert(args.begin(), {"colo", "submit"});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return o;
}

std::string error_of(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const UserError& e) {
    return e.what();
  } catch (const CLI::Error& e) {
    return std::string("CLI11: ") + e.what();
  }
  return "(no error)";
}

// What build_submit_request refuses `colo submit ARGS…` with ("(no error)" when it accepts).
std::string request_error(std::vector<std::string> args) {
  try {
    build_submit_request(parse(std::move(args)));
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SubmitOptions, EnvAsLastOptionBeforeDoubleDashKeepsTheCommandIntact) {
  // Finding 9: a greedy vector --env ate the `--`, so the command's own flags (--batch 64, -c)
  // were read as colo's.
  const SubmitOptions o = parse({"--env", "A=1", "--", "python", "train.py", "--batch", "64"});
  EXPECT_EQ(o.env, (std::vector<std::string>{"A=1"}));
  EXPECT_EQ(o.args, (std::vector<std::string>{"python", "train.py", "--batch", "64"}));
  EXPECT_EQ(o.batch, 0);
  const daemon::SubmitRequest r = build_submit_request(o);
  EXPECT_EQ(r.argv, (std::vector<std::string>{"python", "train.py", "--batch", "64"}));
  EXPECT_EQ(r.env.at("A"), "1");
  EXPECT_FALSE(r.mem_mib.has_value());

  const SubmitOptions sh = parse({"--env", "A=1", "--env", "B=2", "--", "sh", "-c", "echo hi"});
  EXPECT_EQ(sh.env, (std::vector<std::string>{"A=1", "B=2"}));
  EXPECT_EQ(sh.args, (std::vector<std::string>{"sh", "-c", "echo hi"}));
}

TEST(SubmitOptions, NumbersAreRangeCheckedNotWrappedOrClamped) {
  const SubmitOptions o = parse({"--gpus", "2", "--mem", "12GiB", "--", "true"});
  EXPECT_EQ(o.gpus, 2);
  const daemon::SubmitRequest r = build_submit_request(o);
  EXPECT_EQ(r.gpus, 2);
  EXPECT_EQ(r.mem_mib, 12288);
  EXPECT_EQ(error_of({"--batch", "99999999999999999999", "--", "true"}),
            "--batch: 99999999999999999999 is out of range (expected 1..1048576)");
  EXPECT_THAT(error_of({"--batch", "0x10", "--", "true"}), HasSubstr("--batch: '0x10' is not an integer"));
  EXPECT_THAT(error_of({"--seq-len", "-512", "--", "true"}), HasSubstr("--seq-len: -512 is out of range"));
  EXPECT_THAT(error_of({"--gpus", "0", "--", "true"}), HasSubstr("--gpus: 0 is out of range (expected 1..64)"));
  EXPECT_THAT(error_of({"--gpus", "4294967297", "--", "true"}), HasSubstr("--gpus: 4294967297 is out of range"));
  SubmitOptions big = parse({"--mem", "2TiB", "--", "true"});
  try {
    build_submit_request(big);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--mem: memory '2TiB' is out of range"));
  }
}

// `--mem ''` is a bad size, not "no --mem" (which would submit the job with an unknown need).
TEST(SubmitOptions, EmptyMemIsAnErrorNotAbsent) {
  SubmitOptions o = parse({"--mem", "", "--", "true"});
  EXPECT_TRUE(o.mem_given);
  try {
    build_submit_request(o);
    FAIL() << "--mem '' was accepted";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--mem: memory '': expected a number with a unit"));
  }
  EXPECT_FALSE(parse({"--", "true"}).mem_given);
}

// --probe: the request colod will run (as the submitter), with --mem as its fallback.
TEST(SubmitOptions, ProbeFlagsBecomeTheProbeRequestAndMemIsItsFallback) {
  const auto r = build_submit_request(parse({"--probe", "torchvision:resnet50", "--input", "3x224x224", "--batch", "128",
                                             "--optimizer", "adam", "--amp", "bf16", "--checkpointing", "--mem", "20GiB",
                                             "--", "python3", "train.py"}));
  ASSERT_TRUE(r.probe);
  EXPECT_EQ(r.probe->model, "torchvision:resnet50");
  EXPECT_EQ(r.probe->batch, 128);
  EXPECT_EQ(r.probe->amp, "bf16");
  EXPECT_TRUE(r.probe->checkpointing);
  EXPECT_EQ(r.probe_estimator, "trace");
  EXPECT_EQ(r.mem_mib, 20480);
  EXPECT_EQ(r.mem_source, "user");
  EXPECT_EQ(r.fingerprint_inputs.at("probe").at("model"), "torchvision:resnet50");
  EXPECT_EQ(build_submit_request(parse({"--probe", "m.py:f", "--batch", "2", "--estimate", "faketensor", "--", "x"})).probe_estimator,
            "faketensor");
}

// The job's PYTORCH_CUDA_ALLOC_CONF (--env) goes to the probe: colod gives the probe a clean
// environment, and the job's PyTorch will run with these settings.
TEST(SubmitOptions, TheJobsAllocatorSettingsGoWithTheProbe) {
  const auto r = build_submit_request(parse({"--probe", "torchvision:resnet50", "--batch", "8", "--env",
                                             "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "--", "x"}));
  ASSERT_TRUE(r.probe);
  EXPECT_EQ(r.probe->alloc_conf, "expandable_segments:True");
  const auto stored = estimate::ProbeRequest::from_json(r.probe->to_json(), "stored");
  EXPECT_EQ(stored.alloc_conf, "expandable_segments:True");
  EXPECT_FALSE(build_submit_request(parse({"--probe", "torchvision:resnet50", "--batch", "8", "--", "x"})).probe->to_json().contains("alloc_conf"));
  EXPECT_EQ(request_error({"--probe", "torchvision:resnet50", "--batch", "8", "--env", "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:4",
                           "--", "x"}),
            "PYTORCH_CUDA_ALLOC_CONF 'max_split_size_mb:4': max_split_size_mb 4: too small, must be at least 20");
  nlohmann::json bad = r.probe->to_json();
  bad["alloc_conf"] = "backend:cudaMallocAsync";
  EXPECT_THROW(estimate::ProbeRequest::from_json(bad, "stored"), UserError);
  // The newer name wins (as in current PyTorch) and is the one errors name.
  const auto both = build_submit_request(parse({"--probe", "torchvision:resnet50", "--batch", "8", "--env",
                                                "PYTORCH_ALLOC_CONF=max_split_size_mb:64", "--env",
                                                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "--", "x"}));
  EXPECT_EQ(both.probe->alloc_conf, "max_split_size_mb:64");
  EXPECT_EQ(request_error({"--env", "PYTORCH_ALLOC_CONF=max_split_size_mb:4", "--", "x"}),
            "PYTORCH_ALLOC_CONF 'max_split_size_mb:4': max_split_size_mb 4: too small, must be at least 20");
}

// Any job's allocator settings make it another run for the history (its peaks differ), and a
// summary estimate follows them (allocsim) or says it does not (the others).
TEST(SubmitOptions, AllocatorSettingsAreInTheFingerprintAndTheSummaryEstimate) {
  const auto plain = build_submit_request(parse({"--", "x"}));
  const auto set = build_submit_request(parse({"--env", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "--", "x"}));
  EXPECT_FALSE(plain.fingerprint_inputs.contains("alloc_conf"));
  EXPECT_EQ(set.fingerprint_inputs.at("alloc_conf"), "expandable_segments:True");
  const std::string summary = std::string(COLO_SOURCE_DIR) + "/data/carma/summaries/resnet50_32.model";
  const auto est = build_submit_request(parse({"--estimate", "allocsim", "--summary", summary, "--batch", "32", "--env",
                                               "PYTORCH_ALLOC_CONF=max_split_size_mb:64", "--", "x"}));
  EXPECT_NE(est.mem_explanation.find("allocator settings max_split_size_mb:64"), std::string::npos) << est.mem_explanation;
  EXPECT_EQ(est.fingerprint_inputs.at("alloc_conf"), "max_split_size_mb:64");
}

// The summary estimate is made for the profile --gpu (or the job file's [estimate] gpu) names:
// the H100's context and margins, not always the A100's.
TEST(SubmitOptions, TheSummaryEstimateIsForTheNamedProfile) {
  const std::string summary = std::string(COLO_SOURCE_DIR) + "/data/carma/summaries/resnet50_32.model";
  const auto a100 = build_submit_request(parse({"--estimate", "allocsim", "--summary", summary, "--batch", "32", "--", "x"}));
  const auto h100 = build_submit_request(
      parse({"--estimate", "allocsim", "--summary", summary, "--batch", "32", "--gpu", "h100-80gb", "--", "x"}));
  EXPECT_THAT(a100.mem_explanation, HasSubstr("a100-40gb"));
  EXPECT_THAT(h100.mem_explanation, HasSubstr("h100-80gb"));
  EXPECT_NE(a100.mem_mib, h100.mem_mib);
  EXPECT_EQ(a100.fingerprint_inputs, h100.fingerprint_inputs);  // the same job, estimated for another GPU
  const std::string dir = (std::filesystem::path(::testing::TempDir()) / "submit_options_test_gpu").lexically_normal().string();
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/j.toml") << "command = \"x\"\n[estimate]\nestimator = \"allocsim\"\nsummary = \"" << summary
                                 << "\"\nbatch = 32\ngpu = \"h100-80gb\"\n";
  EXPECT_EQ(build_submit_request(parse({dir + "/j.toml"})).mem_mib, h100.mem_mib);
  EXPECT_EQ(build_submit_request(parse({"--gpu", "a100-40gb", dir + "/j.toml"})).mem_mib, a100.mem_mib);  // the flag wins
  std::ofstream(dir + "/bad.toml") << "command = \"x\"\n[estimate]\nsummary = \"" << summary
                                   << "\"\nbatch = 32\ngpu = \"v100-nope\"\n";
  EXPECT_THAT(request_error({dir + "/bad.toml"}), HasSubstr(dir + "/bad.toml:5: "));
  EXPECT_THAT(request_error({dir + "/bad.toml"}), HasSubstr("v100-nope"));
  EXPECT_EQ(request_error({"--gpu", "h100-80gb", "--mem", "1GiB", "--", "x"}),
            "--gpu goes with --estimate NAME --summary FILE or a job file's [estimate] (colod probes with its own "
            "[estimator] probe_gpu)");
  EXPECT_EQ(request_error({"--gpu", "h100-80gb", "--probe", "torchvision:resnet50", "--batch", "8", "--", "x"}),
            "--gpu goes with --estimate NAME --summary FILE or a job file's [estimate] (colod probes with its own "
            "[estimator] probe_gpu)");
  EXPECT_EQ(request_error({"--gpu", "", "--estimate", "allocsim", "--summary", summary, "--batch", "32", "--", "x"}),
            "--gpu: empty profile name");
  EXPECT_THAT(request_error({"--gpu", "v100-nope", "--estimate", "allocsim", "--summary", summary, "--batch", "32", "--", "x"}),
              HasSubstr("v100-nope"));
}

TEST(SubmitOptions, ProbeConflictsAreNamed) {
  const auto err = request_error;
  EXPECT_EQ(err({"--probe", "torchvision:resnet50", "--", "x"}), "--probe needs --batch N (N ≥ 1)");
  EXPECT_EQ(err({"--probe", "torchvision:resnet50", "--batch", "8", "--summary", "s.txt", "--", "x"}),
            "give either --probe or --summary, not both");
  EXPECT_EQ(err({"--probe", "torchvision:resnet50", "--batch", "8", "--estimate", "horus", "--", "x"}),
            "--estimate 'horus' does not use --probe (use trace or faketensor)");
  EXPECT_THAT(err({"--probe", "torchvision:resnet50", "--batch", "8", "--optimizer", "lamb", "--", "x"}),
              HasSubstr("--optimizer 'lamb'"));
  EXPECT_THAT(err({"--probe", "torchvision:resnet50", "--batch", "8", "--input", "3x0", "--", "x"}),
              HasSubstr("--input '3x0'"));
}

// The estimate's flags without an estimate to feed, --rad-memory without --rad and an empty name
// are refused: the job would not be what they say.
TEST(SubmitOptions, FlagsTheRequestWouldNotUseAreRefused) {
  const auto err = request_error;
  EXPECT_EQ(err({"--batch", "32", "--mem", "1GiB", "--", "x"}), "--batch goes with --estimate or --probe (it describes what is estimated)");
  EXPECT_EQ(err({"--optimizer", "adam", "--", "x"}), "--optimizer goes with --estimate or --probe (it describes what is estimated)");
  EXPECT_EQ(err({"--summary", "s.model", "--", "x"}), "--summary goes with --estimate or --probe (it describes what is estimated)");
  EXPECT_EQ(err({"--probe", "torchvision:resnet50", "--batch", "8", "--seq-len", "128", "--", "x"}),
            "--seq-len goes with --estimate and a transformer --summary (a probed model's sequence length is its input)");
  EXPECT_EQ(err({"--probe-script", "--optimizer", "sgd", "--", "python3", "t.py"}),
            "--optimizer is the script's own choice when a script is probed");
  EXPECT_EQ(err({"--rad-memory", "horus", "--", "x"}), "--rad-memory goes with --rad FILE");
  EXPECT_EQ(err({"--name", "", "--", "x"}), "--name: empty name");
  // A job file's missing workdir is refused at submit, unless --workdir replaces it.
  const std::string jobs = (std::filesystem::path(::testing::TempDir()) / "submit_options_test_workdir").lexically_normal().string();
  std::filesystem::create_directories(jobs);
  std::ofstream(jobs + "/j.toml") << "command = \"x\"\nworkdir = \"gone\"\n";
  EXPECT_EQ(err({jobs + "/j.toml"}), jobs + "/j.toml:2: workdir '" + jobs + "/gone' is not a directory");
  EXPECT_EQ(build_submit_request(parse({"--workdir", "/tmp", jobs + "/j.toml"})).workdir, "/tmp");
  EXPECT_EQ(error_of({"--probe", "torchvision:resnet50", "--input", ""}), "--input: empty value");
  // An estimate past any GPU names itself, not colod's API field it would have been refused by.
  EXPECT_THAT(err({"--estimate", "horus", "--summary", std::string(COLO_SOURCE_DIR) + "/data/carma/summaries/resnet50_32.model",
                   "--batch", "1048576", "--", "x"}),
              ::testing::MatchesRegex("--estimate horus: the job needs about [0-9]+ MiB per GPU at batch 1048576, more "
                                      "than any GPU colo schedules \\(1048576 MiB\\)"));
}

// The probe's flags describe a --probe MODEL run: without it they are errors, not ignored. A working
// directory is checked by the submitter, before colod would fail the launch.
TEST(SubmitOptions, ProbeOnlyFlagsAndWorkdirAreChecked) {
  const auto err = request_error;
  EXPECT_EQ(err({"--amp", "bf16", "--", "x"}), "--amp goes with --probe MODEL (it describes the probed training step)");
  EXPECT_EQ(err({"--input", "3x32x32", "--mem", "1GiB", "--", "x"}),
            "--input goes with --probe MODEL (it describes the probed training step)");
  EXPECT_EQ(err({"--foreach", "off", "--", "x"}), "--foreach goes with --probe MODEL (it describes the probed training step)");
  EXPECT_EQ(err({"--data-parallel", "2", "--", "python3", "t.py"}),
            "--data-parallel goes with --probe MODEL (it describes the probed training step)");
  EXPECT_EQ(err({"--workdir", "/nonexistent-colo-dir", "--", "x"}), "--workdir '/nonexistent-colo-dir' is not a directory");
  EXPECT_EQ(err({"--workdir", "/etc/passwd", "--", "x"}), "--workdir '/etc/passwd' is not a directory");
  EXPECT_EQ(err({"--workdir", "", "--", "x"}), "--workdir: empty path");
  EXPECT_EQ(build_submit_request(parse({"--workdir", "/tmp", "--", "x"})).workdir, "/tmp");
}

// --probe-script: colod probes the Python script the job's command runs, with the job's arguments
// and GPUs; the script's content is part of the job's fingerprint.
TEST(SubmitOptions, ProbeScriptTakesTheScriptAndArgumentsFromTheCommand) {
  const std::string dir = ::testing::TempDir();
  const std::string script = dir + "/submit_options_test_train.py";
  std::ofstream(script) << "print('train')\n";
  auto r = build_submit_request(parse({"--probe-script", "--gpus", "2", "--workdir", dir, "--mem", "8GiB", "--",
                                       "python3", "-u", "submit_options_test_train.py", "--lr", "0.1"}));
  ASSERT_TRUE(r.probe);
  EXPECT_EQ(r.probe->script, "submit_options_test_train.py");
  EXPECT_EQ(r.probe->script_args, (std::vector<std::string>{"--lr", "0.1"}));
  EXPECT_EQ(r.probe->data_parallel, 2);
  EXPECT_TRUE(r.probe->model.empty());
  EXPECT_EQ(r.probe_estimator, "trace");
  EXPECT_EQ(r.mem_mib, 8192);
  EXPECT_EQ(r.fingerprint_inputs.at("probe").at("script"), "submit_options_test_train.py");
  const std::string digest = r.fingerprint_inputs.at("script");
  std::ofstream(script) << "print('changed')\n";
  r = build_submit_request(parse({"--probe-script", "--workdir", dir, "--", "python3", "-u", "submit_options_test_train.py",
                                  "--lr", "0.1"}));
  EXPECT_NE(r.fingerprint_inputs.at("script"), digest) << "an edited script is another job";
  EXPECT_EQ(r.probe->data_parallel, 1);
  // A job file's command runs in its workdir: the script is found there, not in the shell's directory.
  const std::string jobs = dir + "/submit_options_test_jobs";
  std::filesystem::create_directories(jobs);
  std::ofstream(jobs + "/j.toml") << "command = [\"python3\", \"submit_options_test_train.py\"]\nworkdir = \"" << dir << "\"\n";
  r = build_submit_request(parse({"--probe-script", jobs + "/j.toml"}));
  ASSERT_TRUE(r.probe);
  EXPECT_EQ(r.fingerprint_inputs.at("script"), build_submit_request(parse({"--probe-script", "--workdir", dir, "--",
                                                                         "python3", "submit_options_test_train.py"}))
                                                   .fingerprint_inputs.at("script"));
  // The request round-trips through colod's JSON.
  const auto back = estimate::ProbeRequest::from_json(r.probe->to_json(), "request");
  EXPECT_EQ(back.script, r.probe->script);
  EXPECT_EQ(back.script_args, r.probe->script_args);
}

// torchrun: the probe plays rank 0 of the processes torchrun starts, one per GPU at most.
TEST(SubmitOptions, ProbeScriptUnderTorchrunKeepsItsProcessCount) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/submit_options_test_ddp.py") << "print('train')\n";
  auto r = build_submit_request(parse({"--probe-script", "--gpus", "4", "--workdir", dir, "--", "torchrun",
                                       "--nproc-per-node", "2", "submit_options_test_ddp.py", "--epochs", "3"}));
  ASSERT_TRUE(r.probe);
  EXPECT_EQ(r.probe->script, "submit_options_test_ddp.py");
  EXPECT_EQ(r.probe->script_args, (std::vector<std::string>{"--epochs", "3"}));
  EXPECT_EQ(r.probe->data_parallel, 4);
  EXPECT_EQ(r.probe->torchrun, 2);
  r = build_submit_request(parse({"--probe-script", "--gpus", "3", "--workdir", dir, "--", "python3", "-m",
                                  "torch.distributed.run", "--nproc_per_node=gpu", "submit_options_test_ddp.py"}));
  EXPECT_EQ(r.probe->torchrun, 3);  // one per GPU of the job
  EXPECT_EQ(estimate::ProbeRequest::from_json(r.probe->to_json(), "request").torchrun, 3);
  EXPECT_THAT(request_error({"--probe-script", "--gpus", "2", "--workdir", dir, "--", "torchrun", "--nproc-per-node", "8",
                             "submit_options_test_ddp.py"}),
              HasSubstr("--nproc-per-node 8: torchrun starts one process per GPU, and the job has 2 GPU(s)"));
  EXPECT_THAT(request_error({"--probe-script", "--workdir", dir, "--", "torchrun", "--nnodes", "4",
                             "submit_options_test_ddp.py"}),
              HasSubstr("colo runs a job on one server"));
}

TEST(SubmitOptions, ProbeScriptConflictsAreNamed) {
  const auto err = request_error;
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/submit_options_test_t.py") << "\n";
  EXPECT_EQ(err({"--probe-script", "--probe", "torchvision:resnet50", "--batch", "8", "--", "python3", "t.py"}),
            "give either --probe or --probe-script, not both");
  EXPECT_EQ(err({"--probe-script", "--workdir", dir, "--batch", "8", "--", "python3", "submit_options_test_t.py"}),
            "--batch is the script's own choice when a script is probed (pass it in the script's arguments)");
  EXPECT_EQ(err({"--probe-script", "--workdir", dir, "--amp", "fp16", "--", "python3", "submit_options_test_t.py"}),
            "--amp is the script's own choice when a script is probed (pass it in the script's arguments)");
  EXPECT_THAT(err({"--probe-script", "--", "python3", "-m", "trainer"}), HasSubstr("runs no script file"));
  EXPECT_THAT(err({"--probe-script", "--workdir", dir, "--", "python3", "missing.py"}), HasSubstr("missing.py' is not a file"));
  EXPECT_EQ(err({"--probe-script", "--estimate", "allocsim", "--", "python3", "t.py"}),
            "--estimate 'allocsim' does not use --probe-script (use trace or faketensor)");
  EXPECT_THAT(err({"--probe-script", "--", "/bin/true"}), HasSubstr("not a Python training script"));
}

}  // namespace
}  // namespace colo::cli

namespace colo::cli {
namespace {

// --smact: the submitter's figure, range-checked; with --summary and no --smact, the activity
// model's prediction when the network is inside its training data, none when it is not.
TEST(SubmitOptions, SmactIsStatedOrPredictedFromTheSummary) {
  SubmitOptions o = parse({"--smact", "0.4", "--", "train"});
  daemon::SubmitRequest r = build_submit_request(o);
  ASSERT_TRUE(r.smact);
  EXPECT_DOUBLE_EQ(*r.smact, 0.4);
  EXPECT_EQ(r.smact_source, "user");
  EXPECT_THAT(error_of({"--smact", "1.5", "--", "x"}), HasSubstr("--smact"));
  EXPECT_THAT(error_of({"--smact", "nan", "--", "x"}), HasSubstr("--smact"));
  const std::string dir = std::string(COLO_SOURCE_DIR) + "/data/carma/summaries/";
  o = parse({"--estimate", "allocsim", "--summary", dir + "resnet18_cifar100.model", "--batch", "32", "--", "train"});
  r = build_submit_request(o);
  ASSERT_TRUE(r.smact);
  EXPECT_EQ(r.smact_source, "gpumemnet-activity");
  EXPECT_GT(*r.smact, 0.0);
  EXPECT_LE(*r.smact, 1.0);
  o = parse({"--estimate", "allocsim", "--summary", dir + "resnet18_cifar100.model", "--batch", "32", "--smact", "0.2",
             "--", "train"});
  EXPECT_EQ(build_submit_request(o).smact_source, "user");  // stated beats predicted
  o = parse({"--estimate", "allocsim", "--summary", dir + "gpt2_xl.model", "--batch", "8", "--", "train"});
  EXPECT_FALSE(build_submit_request(o).smact);  // far outside the training data: unknown
}

}  // namespace
}  // namespace colo::cli
