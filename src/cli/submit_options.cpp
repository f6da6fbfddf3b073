#include "cli/submit_options.h"

#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "cli/number_option.h"
#include "cli/probe_options.h"
#include "core/error.h"
#include "core/one_line.h"
#include "core/limits.h"
#include "daemon/client/job_file.h"
#include "daemon/client/rad_file.h"
#include "estimate/allocator/allocator_settings.h"
#include "estimate/estimator.h"
#include "estimate/input_file.h"
#include "estimate/graph/parsers.h"
#include "estimate/trace/script_command.h"
#include "estimate/utilisation/smact_model.h"

namespace colo::cli {

std::string digest_file(const std::string& path, const char* what) {
  const std::string text = estimate::read_input_file(path, limits::kMaxSummaryBytes, what);
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a: identifies the summary's content
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

namespace {

using namespace colo::daemon;

// The job's allocator settings as its PyTorch will read them: --env (the last one given) over the
// job file's environment. Parsed here, so that a value PyTorch would refuse fails the submit.
std::optional<estimate::AllocatorConfVariable> job_alloc_conf(const SubmitOptions& o, const SubmitRequest& r) {
  std::map<std::string, std::string> env = r.env;
  for (const std::string& kv : o.env)
    if (const size_t eq = kv.find('='); eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  return estimate::allocator_conf_variable([&env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

void apply_estimate(SubmitRequest& r, const EstimateSpec& e, const std::optional<estimate::AllocatorConfVariable>& conf) {
  const estimate::Estimate est = estimate::estimate_from_summary(e.summary, e.batch, e.optimizer, e.estimator, e.seq_len,
                                                                 e.gpu, conf ? &conf->settings : nullptr);
  if (est.mib > limits::kMaxGpuMiB)
    throw UserError(fmt::format("--estimate {}: the job needs about {} MiB per GPU at batch {}, more than any GPU "
                                "colo schedules ({} MiB)", e.estimator, est.mib, e.batch, limits::kMaxGpuMiB));
  r.mem_mib = est.mib;
  r.mem_source = est.estimator;
  r.mem_explanation = est.explanation;
  r.fingerprint_inputs = {{"estimator", e.estimator}, {"summary", digest_file(e.summary)}, {"batch", e.batch},
                          {"optimizer", e.optimizer}, {"seq_len", e.seq_len}};
}

// The solo SM activity the shipped activity model (estimate/utilisation/smact_model.h) predicts
// from the same summary; none when the network lies outside the model's training data or the
// model file is not installed (the job's activity then stays unknown, as without a summary).
void apply_smact_prediction(SubmitRequest& r, const EstimateSpec& e) {
  std::optional<estimate::ActivityModels> models;
  try {
    models = estimate::load_activity_models(estimate::default_activity_model_path());
  } catch (const UserError&) {
    return;
  }
  const estimate::ModelGraph g = estimate::load_summary(e.summary, e.seq_len);
  const estimate::GpuMemNetInputs in = estimate::gpumemnet_inputs(g, e.batch);
  const estimate::ActivityPrediction p = models->for_inputs(in).predict(in);
  if (!p.in_domain) return;
  r.smact = p.smact;
  r.smact_source = "gpumemnet-activity";
}

}  // namespace

void add_submit_options(CLI::App* c, SubmitOptions& o) {
  add_int_flag(c, "--gpus", o.gpus, 1, limits::kMaxJobGpus, "GPUs (all placed at once)", false);
  c->add_option("--mem", o.mem, "per-GPU memory need, e.g. 12GiB (given with a job file or --rad, it replaces the file's)")
      ->each([&o](const std::string&) { o.mem_given = true; });
  c->add_option("--estimate", o.estimator,
                "estimate the need: allocsim, horus, gpumemnet, auto (with --summary); trace, faketensor (with --probe)")
                    ->check(non_empty());
  c->add_option("--summary", o.summary, "model summary for --estimate")->check(non_empty());
  add_int_flag(c, "--batch", o.batch, 1, limits::kMaxBatch, "batch size for --estimate", false);
  c->add_option("--optimizer", o.optimizer, "optimizer for --estimate (default adam)")
      ->each([&o](const std::string&) { o.optimizer_given = true; })->check(non_empty());
  add_int_flag(c, "--seq-len", o.seq_len, 1, limits::kMaxSeqLen, "sequence length for transformer summaries", false);
  c->add_option_function<std::string>(
      "--gpu", [&o](const std::string& s) { o.gpu = s; },
      "calibration profile of --estimate's summary estimate, calibration/<gpu>.json (default a100-40gb; colod's "
      "probes use its [estimator] probe_gpu)");
  c->add_option("--name", o.name, "job name")->each([&o](const std::string&) { o.name_given = true; });
  c->add_option_function<std::string>(
       "--smact", [&o](const std::string& s) { o.smact = parse_real(s, "--smact", 0, 1); },
       "the job's solo SM activity, 0..1 (default: predicted from --estimate's --summary; colod prefers the "
       "same job's history)")
      ->type_name("FRACTION");
  c->add_flag("--checkpoint", o.checkpoint,
              "the job checkpoints when asked (COLO_CHECKPOINT_SIGNAL / COLO_CHECKPOINT_FILE) and exits 75: "
              "colod's time slots may stop it and resume it later");
  c->add_option("--workdir", o.workdir, "working directory (default: the current one)")
      ->each([&o](const std::string&) { o.workdir_given = true; });  // empty: "empty path", below
  // One KEY=VALUE per --env: a vector option would otherwise keep taking values and swallow the
  // `--` that starts the command, so the command's own flags were read as colo's.
  c->add_option("--env", o.env, "KEY=VALUE added to the job's environment (repeatable)")->allow_extra_args(false);
  c->add_option("--rad", o.rad, "submit a research-prototype .rad job file (a command after -- replaces the file's)")
      ->check(non_empty());
  c->add_option("--rad-memory", o.rad_memory, "which .rad figure is the need: measured, horus, faketensor, gpumemnet, none")
      ->each([&o](const std::string&) { o.rad_memory_given = true; })->check(non_empty());
  c->add_flag("--json", o.json, "print the queued job as JSON");
  add_probe_flags(c, o.probe);
  c->add_flag("--probe-script", o.probe_script,
              "estimate from the Python training script the command runs (python3 train.py ARGS), probed by colod "
              "on the CPU for two optimizer steps");
  c->add_option("args", o.args, "the command (after --), or one .toml job file");
}

SubmitRequest build_submit_request(const SubmitOptions& o) {
  SubmitRequest r;
  std::optional<EstimateSpec> estimate;
  // Flags the request would not use are refused, not ignored: the job would not be what they say.
  const bool summary_estimate = !o.estimator.empty() && o.probe.model.empty() && !o.probe_script;
  if (!summary_estimate && o.probe.model.empty() && !o.probe_script) {
    const char* flag = o.batch > 0 ? "--batch" : o.optimizer_given ? "--optimizer" : !o.summary.empty() ? "--summary" : nullptr;
    if (flag) throw UserError(fmt::format("{} goes with --estimate or --probe (it describes what is estimated)", flag));
  }
  if (o.seq_len > 0 && !summary_estimate)
    throw UserError("--seq-len goes with --estimate and a transformer --summary (a probed model's sequence length is its input)");
  if (o.probe_script && o.optimizer_given)
    throw UserError("--optimizer is the script's own choice when a script is probed");
  if (o.rad_memory_given && o.rad.empty()) throw UserError("--rad-memory goes with --rad FILE");
  if (o.name_given && o.name.empty()) throw UserError("--name: empty name");
  const bool toml_file = o.rad.empty() && o.args.size() == 1 && o.args[0].size() > 5 &&
                         o.args[0].substr(o.args[0].size() - 5) == ".toml";
  if (!o.rad.empty()) {
    const RadJob rad = parse_rad_file(o.rad);
    r.argv = o.args.empty() ? std::vector<std::string>{"/bin/sh", "-c", rad.command} : o.args;
    r.gpus = rad.gpus;
    r.name = std::filesystem::path(o.rad).stem().string();
    std::optional<MiB> figure;
    if (o.rad_memory == "measured") figure = rad.measured_mib;
    else if (o.rad_memory == "horus") figure = rad.horus_mib;
    else if (o.rad_memory == "faketensor") figure = rad.faketensor_mib;
    else if (o.rad_memory == "gpumemnet") figure = rad.gpumemnet_mib;
    else if (o.rad_memory != "none")
      throw UserError(fmt::format("--rad-memory '{}': use measured, horus, faketensor, gpumemnet or none", o.rad_memory));
    if (figure) {
      r.mem_mib = figure;
      r.mem_source = "rad:" + o.rad_memory;
    }
    r.fingerprint_inputs = {{"rad", rad.command}, {"batch", rad.batch}, {"summary", rad.summary_file}};
    if (!o.estimator.empty()) estimate = EstimateSpec{o.estimator, o.summary.empty() ? rad.summary_path : o.summary,
                                                      o.batch ? o.batch : rad.batch, o.optimizer, o.seq_len};
  } else if (toml_file) {
    JobFile jf = parse_job_file(o.args[0]);
    // Checked here, as the submitter, as --workdir is (which replaces it): a missing one would only fail at launch.
    if (!jf.workdir_problem.empty() && !o.workdir_given) throw UserError(jf.workdir_problem);
    r = jf.request;
    estimate = jf.estimate;
  } else {
    if (o.args.empty()) throw UserError("nothing to run: give `-- command …`, a job file (.toml) or --rad FILE");
    r.argv = o.args;
  }
  if (!o.probe_script) check_probe_only_flags(o.probe, false);  // a probed script has its own checks
  if (!o.probe.model.empty() || o.probe_script) {
    // colod runs the probe, as the submitter, before the job queues; --mem is the fallback.
    const char* flag = o.probe_script ? "--probe-script" : "--probe";
    if (o.probe_script && !o.probe.model.empty()) throw UserError("give either --probe or --probe-script, not both");
    if (!o.summary.empty()) throw UserError(fmt::format("give either {} or --summary, not both", flag));
    const std::string est = o.estimator.empty() ? "trace" : o.estimator;
    if (est != "trace" && est != "faketensor")
      throw UserError(fmt::format("--estimate '{}' does not use {} (use trace or faketensor)", est, flag));
    estimate::ProbeRequest p = o.probe;
    // The job's allocator settings are what its PyTorch will run with: the probe too (colod gives it
    // a clean environment otherwise).
    if (const auto conf = job_alloc_conf(o, r)) p.alloc_conf = conf->value;
    std::string script_digest;
    if (o.probe_script) {
      // The script and its arguments are the job's own; the GPUs it sees are the job's.
      if (o.batch > 0) throw UserError("--batch is the script's own choice when a script is probed (pass it in the script's arguments)");
      const estimate::ScriptCommand sc = estimate::script_of_command(r.argv);
      p.script = sc.script;
      p.script_args = sc.args;
      p.python = sc.interpreter;  // the probe runs under the job's own Python (colod's estimator.probe_python)
      p.data_parallel = o.gpus > 0 ? o.gpus : r.gpus;
      p.torchrun = sc.torchrun == estimate::ScriptCommand::kOnePerGpu ? p.data_parallel : sc.torchrun;
      namespace fs = std::filesystem;
      const fs::path file = fs::path(sc.script).is_absolute() ? fs::path(sc.script)
                          : (!o.workdir.empty() ? fs::path(o.workdir)
                             : !r.workdir.empty() ? fs::path(r.workdir)  // a job file's
                                                  : fs::current_path()) / sc.script;
      if (!fs::is_regular_file(file))
        throw UserError(fmt::format("--probe-script: the script '{}' is not a file", file.string()));
      script_digest = digest_file(file.string(), "training script");
    } else {
      if (o.batch <= 0) throw UserError("--probe needs --batch N (N ≥ 1)");
      p.batch = o.batch;
      p.optimizer = o.optimizer;
    }
    p.arguments();  // the probe's own checks, with colo's flag names
    r.probe = p;
    r.probe_estimator = est;
    estimate.reset();
    if (o.mem_given || !o.mem.empty()) {
      r.mem_mib = parse_mib(o.mem, "--mem", 1, limits::kMaxGpuMiB);
      r.mem_source = "user";
    }
    r.fingerprint_inputs = {{"estimator", est}, {"probe", p.to_json()}};
    if (!script_digest.empty()) r.fingerprint_inputs["script"] = script_digest;
  } else if (!o.estimator.empty() && o.rad.empty()) {
    if (o.summary.empty()) throw UserError("--estimate needs --summary FILE (a model summary)");
    if (o.batch <= 0) throw UserError("--estimate needs --batch N (N ≥ 1)");
    estimate = EstimateSpec{o.estimator, o.summary, o.batch, o.optimizer, o.seq_len};
  }
  if ((o.mem_given || !o.mem.empty()) && !r.probe) {
    if (!o.estimator.empty()) throw UserError("give either --mem or --estimate, not both");
    r.mem_mib = parse_mib(o.mem, "--mem", 1, limits::kMaxGpuMiB);
    r.mem_source = "user";
    estimate.reset();
  }
  if (o.gpu) {
    if (!estimate)
      throw UserError("--gpu goes with --estimate NAME --summary FILE or a job file's [estimate] (colod probes with its "
                      "own [estimator] probe_gpu)");
    if (o.gpu->empty()) throw UserError("--gpu: empty profile name");
    estimate->gpu = *o.gpu;
  }
  const auto alloc_conf = job_alloc_conf(o, r);
  if (estimate) {
    apply_estimate(r, *estimate, alloc_conf);
    if (!o.smact && !r.smact) apply_smact_prediction(r, *estimate);
  }
  if (o.smact) {
    r.smact = o.smact;
    r.smact_source = "user";
  }
  if (o.gpus) r.gpus = o.gpus;
  if (o.checkpoint) r.checkpoint = true;
  if (!o.name.empty()) r.name = o.name;
  if (o.workdir_given) {
    // Checked here, as the submitter: a job whose directory is missing would only fail at launch.
    std::error_code ec;
    if (o.workdir.empty()) throw UserError("--workdir: empty path");
    if (!std::filesystem::is_directory(o.workdir, ec))
      throw UserError(fmt::format("--workdir '{}' is not a directory", one_line(o.workdir)));
  }
  if (!o.workdir.empty()) r.workdir = std::filesystem::absolute(o.workdir).lexically_normal().string();
  if (r.workdir.empty()) r.workdir = std::filesystem::current_path().string();
  for (const std::string& kv : o.env) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) throw UserError(fmt::format("--env '{}': expected KEY=VALUE", kv));
    check_env_name(kv.substr(0, eq));
    r.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  // Runs under other allocator settings are other runs for the history (their peaks differ).
  if (alloc_conf) r.fingerprint_inputs["alloc_conf"] = alloc_conf->value;
  // The job creates files as this shell would (colod's own mask is 077). Reading the mask sets it.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  r.umask = static_cast<int>(mask & 0777);
  return r;
}

}  // namespace colo::cli
