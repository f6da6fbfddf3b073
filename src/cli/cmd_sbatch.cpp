// colo sbatch: submit a batch job to Slurm with a GPU share sized by colo's estimate.
//   colo sbatch [--site FILE] [--gpu-mem 12GiB | --estimate NAME --summary F --batch N … |
//                --probe MODEL --batch N …] [--dry-run] [sbatch options] script [args]
// The estimate runs here, as the submitting user: the history of earlier runs of the same job
// first, then the flags' estimator. It becomes shards (site margin), is recorded in the job's
// comment, and sbatch is run (exec) with the user's own options.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command_registry.h"
#include "cli/number_option.h"
#include "cli/probe_options.h"
#include "cli/submit_options.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/one_line.h"
#include "core/parse_number.h"
#include "daemon/history_estimator.h"
#include "estimate/estimator.h"
#include "estimate/trace/probe_runner.h"
#include "slurm/atomic_file.h"
#include "slurm/peak_history.h"
#include "slurm/sbatch_command.h"
#include "slurm/site_settings.h"
#include "slurm/slurm_conf.h"

namespace {

namespace slurm = colo::slurm;

struct SbatchOpts {
  std::string site, gpu_mem, estimator, summary, optimizer = "adam", gpu = "a100-40gb";
  std::int64_t batch = 0, seq_len = 0;
  colo::estimate::ProbeRequest probe;
  double probe_timeout = 300;
  bool dry_run = false, no_history = false;
  std::vector<std::string> estimate_flags;  // --batch, --optimizer, … as given (checked against the sizing used)
  std::set<std::string> colo_flags;         // this command's own long flags (refused among sbatch's)
};

// Flags that only an estimator reads: refused where no estimator reads them, never ignored.
void check_estimate_flags(const SbatchOpts& o) {
  auto given = [&](const char* f) { return std::find(o.estimate_flags.begin(), o.estimate_flags.end(), f) != o.estimate_flags.end(); };
  const bool probe = !o.probe.model.empty(), summary = !o.estimator.empty() && !probe;
  for (const char* f : {"--batch", "--optimizer", "--gpu"})
    if (given(f) && !probe && !summary)
      throw colo::UserError(fmt::format("{} is for an estimate (--probe MODEL or --estimate NAME --summary FILE){}", f,
                                        o.gpu_mem.empty() ? "" : "; --gpu-mem is the need itself"));
  if (given("--seq-len") && !summary)
    throw colo::UserError("--seq-len is for --estimate NAME --summary FILE (a probed model's sequence length is its --input)");
  if (given("--probe-timeout") && !probe) throw colo::UserError("--probe-timeout goes with --probe MODEL");
  colo::cli::check_probe_only_flags(o.probe, false);
  if (probe && o.probe.data_parallel != colo::estimate::ProbeRequest{}.data_parallel)
    throw colo::UserError("--data-parallel: colo sbatch sizes one GPU's share (a job of several GPUs: plain sbatch --gres=gpu:N)");
}

// What identifies this training run for the history: the script (path and content) or the
// --wrap command, its arguments, and the estimator inputs.
std::string fingerprint(const slurm::SbatchArgs& a, const nlohmann::json& inputs) {
  std::vector<std::string> argv;
  nlohmann::json in = inputs;
  if (!a.script.empty()) {
    argv.push_back(std::filesystem::absolute(a.script).lexically_normal().string());
    in["script"] = colo::cli::digest_file(a.script, "batch script");
  } else {
    argv.push_back("--wrap=" + a.wrap);
  }
  argv.insert(argv.end(), a.script_args.begin(), a.script_args.end());
  return colo::daemon::job_fingerprint(static_cast<std::int64_t>(::getuid()), std::filesystem::current_path().string(), argv,
                                       1, in);
}

void run(const SbatchOpts& o, const std::vector<std::string>& rest) {
  const slurm::SiteSettings site = slurm::load_site_settings(slurm::site_settings_path(o.site));
  slurm::SbatchArgs args = slurm::split_sbatch_args(rest);
  for (const std::string& a : args.options)
    if (a.rfind("--", 0) == 0 && o.colo_flags.count(a.substr(0, a.find('='))))
      throw colo::UserError(fmt::format("'{}' comes after an sbatch option: give colo's flags first "
                                        "(colo sbatch [colo flags] [sbatch options] script)", colo::one_line(a.substr(0, a.find('=')))));
  if (!args.script.empty()) {
    std::error_code ec;
    const auto st = std::filesystem::status(args.script, ec);
    if (!std::filesystem::exists(st))
      throw colo::UserError(fmt::format("batch script '{}' not found", colo::one_line(args.script)));
    if (!std::filesystem::is_regular_file(st))
      throw colo::UserError(fmt::format("batch script '{}' is not a regular file", colo::one_line(args.script)));
  }
  // What sbatch would also read, and colo's command-line --gres/--comment would silently override:
  // the SBATCH_* variables, then the script's #SBATCH lines (the variables win over the script).
  for (const char* v : {"SBATCH_GPUS", "SBATCH_GPUS_PER_NODE", "SBATCH_GPUS_PER_TASK"})
    if (const char* x = std::getenv(v); x && *x)
      throw colo::UserError(fmt::format("${} is set ({}): colo sbatch sizes the GPU share from the estimate; unset it, "
                                        "or use plain sbatch", v, colo::one_line(x)));
  if (const char* g = std::getenv("SBATCH_GRES"); g && *g) {
    slurm::apply_script_directives(args, {std::string("--gres=") + g}, "$SBATCH_GRES");
    args.gres_given = true;
  }
  if (!args.script.empty()) {
    std::string text;
    try {
      if (!slurm::read_small_file(args.script, text, 16u << 20))
        throw colo::UserError(fmt::format("batch script '{}' not found", colo::one_line(args.script)));
      slurm::apply_script_directives(args, slurm::script_directives(text), args.script + ": #SBATCH");
    } catch (const colo::UserError& e) {
      const std::string what = e.what();
      throw colo::UserError(what.rfind(args.script, 0) == 0 ? what : args.script + ": " + what);
    }
  }
  const int given = !o.gpu_mem.empty() + !o.estimator.empty() + !o.probe.model.empty();
  if (!o.gpu_mem.empty() && given > 1) throw colo::UserError("give either --gpu-mem or an estimator, not both");
  check_estimate_flags(o);

  // The job's allocator settings: sbatch exports this environment to the job, whose PyTorch reads them.
  const auto alloc_conf = colo::estimate::allocator_conf_from_environment();
  nlohmann::json inputs = nlohmann::json::object();
  slurm::SbatchSizing sizing;
  std::function<void()> estimate;
  if (!o.gpu_mem.empty()) {
    const colo::MiB m = colo::parse_mib(o.gpu_mem, "--gpu-mem", 1, colo::limits::kMaxGpuMiB);
    inputs = {{"mem", m}};
    estimate = [&sizing, m] {
      sizing.mem_mib = m;
      sizing.estimator = "user";
    };
  } else if (!o.probe.model.empty()) {
    if (!o.summary.empty()) throw colo::UserError("give either --probe or --summary, not both");
    const std::string est = o.estimator.empty() ? "trace" : o.estimator;
    if (est != "trace" && est != "faketensor")
      throw colo::UserError(fmt::format("--estimate '{}' does not use --probe (use trace or faketensor)", est));
    if (o.batch <= 0) throw colo::UserError("--probe needs --batch N (N ≥ 1)");
    colo::estimate::ProbeRequest req = o.probe;
    req.batch = o.batch;
    req.optimizer = o.optimizer;
    if (alloc_conf) req.alloc_conf = alloc_conf->value;
    req.arguments();  // the probe's own checks, with colo's flag names
    inputs = {{"estimator", est}, {"probe", req.to_json()}};
    estimate = [&sizing, &o, req, est] {
      colo::estimate::ProbeLimits lim;
      lim.timeout_seconds = o.probe_timeout;
      auto run = colo::estimate::run_probe(req, lim);
      colo::estimate::EstimateRequest er;
      er.gpu = o.gpu;
      er.batch = req.batch;
      er.trace = &run.trace;
      const auto e = colo::estimate::make_estimator(est)->estimate(er);
      sizing.mem_mib = e.mib;
      sizing.estimator = e.estimator;
      sizing.explanation = e.explanation;
    };
  } else if (!o.estimator.empty()) {
    if (o.summary.empty()) throw colo::UserError("--estimate needs --summary FILE (a model summary)");
    if (o.batch <= 0) throw colo::UserError("--estimate needs --batch N (N ≥ 1)");
    inputs = {{"estimator", o.estimator}, {"summary", colo::cli::digest_file(o.summary)}, {"batch", o.batch},
              {"optimizer", o.optimizer}, {"seq_len", o.seq_len}};
    estimate = [&sizing, &o, &alloc_conf] {
      const auto e = colo::estimate::estimate_from_summary(o.summary, o.batch, o.optimizer, o.estimator, o.seq_len, o.gpu,
                                                           alloc_conf ? &alloc_conf->settings : nullptr);
      sizing.mem_mib = e.mib;
      sizing.estimator = e.estimator;
      sizing.explanation = e.explanation;
    };
  } else if (!o.summary.empty()) {
    throw colo::UserError("--summary needs --estimate NAME (allocsim, horus, gpumemnet, auto)");
  }
  // Runs under other allocator settings are other runs for the history (their peaks differ).
  if (alloc_conf) inputs["alloc_conf"] = alloc_conf->value;
  sizing.fingerprint = fingerprint(args, inputs);
  std::optional<slurm::PeakRecord> seen;
  if (!o.no_history) {
    try {
      seen = slurm::PeakHistory::load(slurm::history_path(site.state_dir)).find(sizing.fingerprint);
    } catch (const colo::UserError& e) {
      std::cerr << "colo: note: history not read: " << colo::one_line(e.what()) << "\n";
    }
  }
  if (seen && seen->peak_mib > 0) {
    sizing.mem_mib = seen->peak_mib;
    sizing.estimator = "history";
    sizing.explanation = fmt::format("peak of job {}, an earlier run of this job", seen->job_id);
  } else if (estimate) {
    estimate();
  }
  const slurm::SbatchPlan plan = slurm::plan_sbatch(args, sizing, site);
  std::cerr << plan.summary << "\n";
  if (o.dry_run) {
    // A command to paste: every word that is not plainly safe is quoted.
    std::string line;
    for (const auto& a : plan.argv) {
      const bool plain = !a.empty() && a.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                           "0123456789_./:=,+@%-") == std::string::npos;
      line += (line.empty() ? "" : " ") + (plain ? a : slurm::shell_word(a));
    }
    std::cout << line << "\n";
    return;
  }
  std::cout.flush();
  std::vector<char*> argv;
  for (const auto& a : plan.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execvp("sbatch", argv.data());
  throw colo::UserError(fmt::format("cannot run sbatch: {} (is slurm-client installed?)", std::strerror(errno)));
}

colo::cli::RegisterCommand reg_sbatch([](CLI::App& app) {
  auto o = std::make_shared<SbatchOpts>();
  CLI::App* c = app.add_subcommand("sbatch", "submit to Slurm with a GPU share (shards) sized by colo's estimate: "
                                             "`colo sbatch [colo flags] [sbatch options] script [args]`");
  // An empty value is an error, not "not given" (which would submit with the site default).
  c->add_option("--site", o->site, "colo's Slurm settings (default $COLO_SLURM_SITE or /etc/colo/slurm.toml)")
      ->check(colo::cli::non_empty());
  c->add_option("--gpu-mem", o->gpu_mem, "the job's GPU memory need, e.g. 12GiB (sbatch's own --mem is host memory)")
      ->check(colo::cli::non_empty());
  c->add_option("--estimate", o->estimator, "allocsim, horus, gpumemnet, auto (with --summary); trace, faketensor (with --probe)")
      ->check(colo::cli::non_empty());
  c->add_option("--summary", o->summary, "model summary for --estimate")->check(colo::cli::non_empty());
  colo::cli::add_int_flag(c, "--batch", o->batch, 1, colo::limits::kMaxBatch, "batch size for the estimate", false);
  c->add_option("--optimizer", o->optimizer, "optimizer for the estimate (default adam)")->check(colo::cli::non_empty());
  colo::cli::add_int_flag(c, "--seq-len", o->seq_len, 1, colo::limits::kMaxSeqLen, "sequence length for transformer summaries", false);
  c->add_option("--gpu", o->gpu, "calibration profile for the estimate (default a100-40gb)")->check(colo::cli::non_empty());
  colo::cli::add_probe_flags(c, o->probe);
  c->add_option_function<std::string>("--probe-timeout", [o](const std::string& s) {
    o->probe_timeout = colo::parse_real(s, "--probe-timeout", 1, 86400);
  }, "seconds the probe may take [1..86400] (default 300)");
  c->add_flag("--dry-run", o->dry_run, "print the sbatch command instead of running it");
  c->add_flag("--no-history", o->no_history, "ignore the peaks of earlier runs");
  // Everything from the first option colo does not know is sbatch's (options, script, args).
  c->prefix_command();
  c->callback([o, c] {
    for (const char* f : {"--batch", "--optimizer", "--seq-len", "--gpu", "--probe-timeout"})
      if (c->count(f) > 0) o->estimate_flags.emplace_back(f);
    for (const CLI::Option* opt : c->get_options())
      for (const std::string& name : opt->get_lnames()) o->colo_flags.insert("--" + name);
    run(*o, c->remaining());
  });
});

}  // namespace
