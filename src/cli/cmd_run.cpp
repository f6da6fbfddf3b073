// colo run: the wrapper around a training command on a Slurm node (in the batch script:
// `colo run -- python train.py …`). It passes the output through, watches the job's GPU memory
// and recognises an out-of-memory crash the way colod does; on one it exits with the site's
// RequeueExitHold code, so Slurm requeues and holds the job for `colo slurm recover`. Each
// attempt leaves a report (outcome, peak) in the state directory's drop box.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/command_registry.h"
#include "cli/number_option.h"
#include "core/error.h"
#include "core/one_line.h"
#include "core/parse_number.h"
#include "slurm/attempt_report.h"
#include "slurm/job_runner.h"
#include "slurm/site_gpus.h"
#include "slurm/site_settings.h"

namespace {

namespace slurm = colo::slurm;

struct RunOpts {
  std::string site;
  std::vector<std::string> command;
};

void run(const RunOpts& o) {
  if (o.command.empty()) throw colo::UserError("colo run: no command (give it after --)");
  const slurm::SiteSettings site = slurm::load_site_settings(slurm::site_settings_path(o.site));
  std::string why;
  auto backend = slurm::open_site_gpus(site, why);
  if (!backend) std::cerr << "colo run: note: no GPU memory readings (" << why << ")\n";
  const auto gpus = slurm::job_gpu_indices(std::getenv("SLURM_JOB_GPUS"), std::getenv("CUDA_VISIBLE_DEVICES"));
  const slurm::RunResult r = slurm::run_and_watch(o.command, backend.get(), gpus, site.sample_seconds);
  const int code = slurm::exit_code_for(r, site.hold_exit_code);
  if (r.oom && code == site.hold_exit_code)
    std::cerr << fmt::format("colo run: out of memory ({}: {}); exit {} so Slurm holds the job for colo slurm recover\n",
                             r.oom->framework, r.oom->line, code);
  else if (r.status == site.hold_exit_code)
    std::cerr << fmt::format("colo run: the command exited {} (the site's OOM hold code) without an OOM message; exit 1\n",
                             r.status);
  const char* job = std::getenv("SLURM_JOB_ID");
  if (job && *job) {
    slurm::AttemptReport rep;
    try {
      rep.job_id = colo::parse_unsigned(job, "SLURM_JOB_ID");
      const char* restart = std::getenv("SLURM_RESTART_COUNT");
      rep.restart = restart && *restart ? static_cast<int>(colo::parse_integer(restart, "SLURM_RESTART_COUNT", 0, 1 << 20)) : 0;
      rep.outcome = code == 0 ? "ok" : (code == site.hold_exit_code ? "oom" : "failed");
      rep.exit_code = code;
      rep.peak_mib = r.peak_mib;
      if (r.oom) rep.oom_line = r.oom->line;
      if (const char* g = std::getenv("SLURM_JOB_GPUS")) rep.gpus = g;
      if (const char* s = std::getenv("SLURM_SHARDS_ON_NODE")) rep.tres = fmt::format("shard:{}", s);
      slurm::write_attempt_report(site.state_dir, rep);
    } catch (const colo::UserError& e) {
      // The job's own result stands; only the recovery agent's knowledge of it is lost.
      std::cerr << "colo run: note: attempt report not written: " << colo::one_line(e.what()) << "\n";
    }
  }
  std::cout.flush();
  std::cerr.flush();
  std::_Exit(code);
}

colo::cli::RegisterCommand reg_run([](CLI::App& app) {
  auto o = std::make_shared<RunOpts>();
  CLI::App* c = app.add_subcommand("run", "run a job's command on a Slurm node, exiting with the site's "
                                          "RequeueExitHold code when it runs out of GPU memory: `colo run -- command …`");
  c->add_option("--site", o->site, "colo's Slurm settings (default $COLO_SLURM_SITE or /etc/colo/slurm.toml)")
      ->check(colo::cli::non_empty());  // empty is an error, not the default file
  // The command: everything after --, or from its first word on (its options are its own).
  c->add_option("command", o->command, "the command and its arguments (after --)");
  c->positionals_at_end();
  c->callback([o] { run(*o); });
});

}  // namespace
