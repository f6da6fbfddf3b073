#include "slurm/sbatch_command.h"

#include <array>
#include <string_view>

#include <fmt/format.h>

#include "core/error.h"
#include "core/one_line.h"
#include "slurm/job_comment.h"
#include "slurm/shard_plan.h"

namespace colo::slurm {

namespace {

// sbatch 22.05's options that take no value (or only an optional one, given as --opt=value).
constexpr std::array<std::string_view, 33> kFlags{
    "-h", "--help", "-H", "--hold", "--ignore-pbs", "-O", "--overcommit", "-s", "--oversubscribe", "--parsable",
    "-Q", "--quiet", "--requeue", "--no-requeue", "--reboot", "--spread-job", "--test-only", "--usage", "-V",
    "--version", "-v", "--verbose", "-W", "--wait", "--exclusive", "--contiguous", "--use-min-nodes",
    "--get-user-env", "--propagate", "-k", "--no-kill", "-I", "--immediate"};

bool is_flag(const std::string& a) {
  for (auto f : kFlags)
    if (a == f) return true;
  // -vvv
  return a.size() > 2 && a[0] == '-' && a[1] == 'v' && a.find_first_not_of('v', 1) == std::string::npos;
}

bool is_gpu_request(std::string_view name) {
  return name == "--gres" || name == "--gpus" || name == "-G" || name == "--gpus-per-node" ||
         name == "--gpus-per-task" || name == "--gpus-per-socket" || name == "--tres-per-task";
}

}  // namespace

SbatchArgs split_sbatch_args(const std::vector<std::string>& args) {
  SbatchArgs out;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.empty() || a[0] != '-' || a == "-") break;  // the script
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    std::string value;
    const bool has_value = eq != std::string::npos;
    if (has_value) value = a.substr(eq + 1);
    if (!has_value && !is_flag(a)) {
      if (i + 1 >= args.size()) throw UserError(fmt::format("sbatch option '{}' needs a value", one_line(a)));
      value = args[++i];
    }
    if (is_gpu_request(name))
      throw UserError(fmt::format("'{}': colo sbatch sizes the GPU share from the estimate; drop the option "
                                  "(or give --gpu-mem), or use plain sbatch", one_line(name)));
    if (name == "--comment") {
      out.user_comment = value;
      continue;
    }
    if (name == "--wrap") out.wrap = value;
    if (has_value || is_flag(a)) out.options.push_back(a);
    else {
      out.options.push_back(a);
      out.options.push_back(value);
    }
  }
  if (i < args.size()) {
    if (!out.wrap.empty()) throw UserError("give a script or --wrap, not both");
    out.script = args[i];
    out.script_args.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
  } else if (out.wrap.empty()) {
    throw UserError("nothing to submit: give the batch script (or --wrap \"command\") after colo's and sbatch's options");
  }
  return out;
}

SbatchPlan plan_sbatch(const SbatchArgs& args, const SbatchSizing& sizing, const SiteSettings& site) {
  SbatchPlan p;
  p.argv = {"sbatch"};
  std::string gres;
  if (!sizing.mem_mib) {
    gres = "--gres=shard";
    p.summary = "colo: no estimate; job_submit.lua gives the site's default share";
  } else {
    const int shards = shards_for(*sizing.mem_mib, site.margin, site.shard_mib);
    const std::string what = fmt::format("{} MiB ({}{}{})", *sizing.mem_mib, sizing.estimator,
                                         sizing.explanation.empty() ? "" : ": ", sizing.explanation);
    if (shards > site.shards_per_gpu) {
      if (site.oversize == "reject")
        throw UserError(fmt::format("{} + {:.0f}% is {} shards, more than one GPU's {} ({} MiB): the job cannot share a GPU; "
                                    "submit it for whole GPUs with plain sbatch --gres=gpu:1",
                                    what, 100 * site.margin, shards, site.shards_per_gpu,
                                    static_cast<MiB>(site.shards_per_gpu) * site.shard_mib));
      gres = "--gres=gpu:1";
      p.summary = fmt::format("colo: {} + {:.0f}% is more than one GPU's {} shards: a whole GPU", what, 100 * site.margin,
                              site.shards_per_gpu);
    } else {
      gres = fmt::format("--gres=shard:{}", shards);
      p.summary = fmt::format("colo: {} + {:.0f}% → {} shards of {} MiB", what, 100 * site.margin, shards, site.shard_mib);
    }
  }
  p.argv.push_back(gres);
  JobComment c;
  c.mem_mib = sizing.mem_mib.value_or(0);
  c.estimator = sizing.estimator;
  c.fingerprint = sizing.fingerprint;
  p.argv.push_back("--comment=" + format_comment(c, args.user_comment));
  p.argv.insert(p.argv.end(), args.options.begin(), args.options.end());
  if (!args.script.empty()) {
    p.argv.push_back(args.script);
    p.argv.insert(p.argv.end(), args.script_args.begin(), args.script_args.end());
  }
  return p;
}

}  // namespace colo::slurm
