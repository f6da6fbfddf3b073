// colo submit: queue a training job on colod (sbatch-like flags, a TOML job file, or a .rad
// file of the research prototype). Memory estimates run here, with the submitter's rights over
// their own files; colod receives the figure plus the inputs that fingerprint the job.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "cli/command_registry.h"
#include "core/error.h"
#include "daemon/client/api_client.h"
#include "daemon/client/job_file.h"
#include "daemon/client/job_request.h"
#include "daemon/client/rad_file.h"
#include "estimate/estimator.h"

namespace {

using namespace colo::daemon;

struct SubmitOptions {
  int gpus = 0;  // 0 = not given
  std::string mem, estimator, summary, optimizer = "adam", name, workdir, rad, rad_memory = "measured";
  std::int64_t batch = 0, seq_len = 0;
  std::vector<std::string> env, args;
  bool json = false;
};

std::string digest_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw colo::UserError(fmt::format("{}: cannot read model summary", path));
  std::stringstream ss;
  ss << in.rdbuf();
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a: identifies the summary's content
  for (unsigned char ch : ss.str()) {
    h ^= ch;
    h *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

void apply_estimate(SubmitRequest& r, const EstimateSpec& e) {
  const colo::estimate::Estimate est =
      colo::estimate::estimate_from_summary(e.summary, e.batch, e.optimizer, e.estimator, e.seq_len);
  r.mem_mib = est.mib;
  r.mem_source = est.estimator;
  r.mem_explanation = est.explanation;
  r.fingerprint_inputs = {{"estimator", e.estimator}, {"summary", digest_file(e.summary)}, {"batch", e.batch},
                          {"optimizer", e.optimizer}, {"seq_len", e.seq_len}};
}

void run(const SubmitOptions& o) {
  SubmitRequest r;
  std::optional<EstimateSpec> estimate;
  const bool toml_file = o.rad.empty() && o.args.size() == 1 && o.args[0].size() > 5 &&
                         o.args[0].substr(o.args[0].size() - 5) == ".toml";
  if (!o.rad.empty()) {
    const RadJob rad = parse_rad_file(o.rad);
    r.argv = o.args.empty() ? std::vector<std::string>{"/bin/sh", "-c", rad.command} : o.args;
    r.gpus = rad.gpus;
    r.name = std::filesystem::path(o.rad).stem().string();
    std::optional<colo::MiB> figure;
    if (o.rad_memory == "measured") figure = rad.measured_mib;
    else if (o.rad_memory == "horus") figure = rad.horus_mib;
    else if (o.rad_memory == "faketensor") figure = rad.faketensor_mib;
    else if (o.rad_memory == "gpumemnet") figure = rad.gpumemnet_mib;
    else if (o.rad_memory != "none")
      throw colo::UserError(fmt::format("--rad-memory '{}': use measured, horus, faketensor, gpumemnet or none", o.rad_memory));
    if (figure) {
      r.mem_mib = figure;
      r.mem_source = "rad:" + o.rad_memory;
    }
    r.fingerprint_inputs = {{"rad", rad.command}, {"batch", rad.batch}, {"summary", rad.summary_file}};
    if (!o.estimator.empty()) estimate = EstimateSpec{o.estimator, o.summary.empty() ? rad.summary_path : o.summary,
                                                      o.batch ? o.batch : rad.batch, o.optimizer, o.seq_len};
  } else if (toml_file) {
    JobFile jf = parse_job_file(o.args[0]);
    r = jf.request;
    estimate = jf.estimate;
  } else {
    if (o.args.empty()) throw colo::UserError("nothing to run: give `-- command …`, a job file (.toml) or --rad FILE");
    r.argv = o.args;
  }
  if (!o.estimator.empty() && o.rad.empty()) {
    if (o.summary.empty()) throw colo::UserError("--estimate needs --summary FILE (a model summary)");
    if (o.batch <= 0) throw colo::UserError("--estimate needs --batch N (N ≥ 1)");
    estimate = EstimateSpec{o.estimator, o.summary, o.batch, o.optimizer, o.seq_len};
  }
  if (!o.mem.empty()) {
    if (!o.estimator.empty()) throw colo::UserError("give either --mem or --estimate, not both");
    r.mem_mib = parse_memory(o.mem);
    r.mem_source = "user";
    estimate.reset();
  }
  if (estimate) apply_estimate(r, *estimate);
  if (o.gpus) r.gpus = o.gpus;
  if (!o.name.empty()) r.name = o.name;
  if (!o.workdir.empty()) r.workdir = std::filesystem::absolute(o.workdir).lexically_normal().string();
  if (r.workdir.empty()) r.workdir = std::filesystem::current_path().string();
  for (const std::string& kv : o.env) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) throw colo::UserError(fmt::format("--env '{}': expected KEY=VALUE", kv));
    check_env_name(kv.substr(0, eq));
    r.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  const nlohmann::json body = to_json(r);
  const ApiClient client(colo::cli::globals().socket);
  const nlohmann::json job = client.call("POST", "/v1/jobs", &body);
  if (o.json) std::cout << job.dump(2) << "\n";
  else std::cout << job.at("id").get<std::uint64_t>() << "\n";
}

colo::cli::RegisterCommand reg([](CLI::App& app) {
  auto o = std::make_shared<SubmitOptions>();
  CLI::App* c = app.add_subcommand("submit", "queue a job on colod: `colo submit [flags] -- command …`, FILE.toml, or --rad FILE");
  c->add_option("--gpus", o->gpus, "GPUs (all placed at once)")->check(CLI::Range(1, 64));
  c->add_option("--mem", o->mem, "per-GPU memory need, e.g. 12GiB");
  c->add_option("--estimate", o->estimator, "estimate the need: allocsim, horus, gpumemnet, auto");
  c->add_option("--summary", o->summary, "model summary for --estimate");
  c->add_option("--batch", o->batch, "batch size for --estimate");
  c->add_option("--optimizer", o->optimizer, "optimizer for --estimate (default adam)");
  c->add_option("--seq-len", o->seq_len, "sequence length for transformer summaries");
  c->add_option("--name", o->name, "job name");
  c->add_option("--workdir", o->workdir, "working directory (default: the current one)");
  c->add_option("--env", o->env, "KEY=VALUE added to the job's environment (repeatable)");
  c->add_option("--rad", o->rad, "submit a research-prototype .rad job file");
  c->add_option("--rad-memory", o->rad_memory, "which .rad figure is the need: measured, horus, faketensor, gpumemnet, none");
  c->add_flag("--json", o->json, "print the queued job as JSON");
  c->add_option("args", o->args, "the command (after --), or one .toml job file");
  c->callback([o] { run(*o); });
});

}  // namespace
