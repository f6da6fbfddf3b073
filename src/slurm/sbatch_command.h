#pragma once
// The sbatch command `colo sbatch` runs: the user's own sbatch options and script, plus the GPU
// share colo sized (--gres=shard:N, or a whole GPU) and colo's record in --comment (a comment
// the user gave is kept after it).
#include <optional>
#include <string>
#include <vector>

#include "core/units.h"
#include "slurm/site_settings.h"

namespace colo::slurm {

// The user's sbatch arguments, split: options, then the script (or --wrap) and its arguments.
struct SbatchArgs {
  std::vector<std::string> options;      // without --comment
  std::string user_comment;              // --comment's text, if given
  std::string script;                    // "" with --wrap
  std::string wrap;                      // --wrap's command
  std::vector<std::string> script_args;
  std::vector<std::string> other_gres;   // --gres items that are not GPUs ("nvme:1"): kept beside colo's
  bool gres_given = false, comment_given = false;  // on this command line (they override the script's)
};
// Throws colo::UserError for a GPU request of the user's own (--gres, --gpus, …: colo sizes
// it), a missing script, or an option that lacks its value.
SbatchArgs split_sbatch_args(const std::vector<std::string>& args);

// The #SBATCH directives of a batch script's text, as sbatch reads them: from the lines before
// the first one that is neither blank nor a comment, the words after "#SBATCH", split at blanks
// with '…' and "…" quoting (no expansion); a word starting with '#' ends the line. Throws
// colo::UserError for an unclosed quote (naming the line).
std::vector<std::string> script_directives(const std::string& text);

// sbatch lets the command line override the script's directives and the SBATCH_* variables, and
// colo sbatch puts --gres and --comment on the command line: so what the script (or
// $SBATCH_GRES) asked for is checked here as the command line is (a GPU request of its own is
// refused, naming `where`) and kept — its other GRES and its comment — unless the command line
// gave its own.
void apply_script_directives(SbatchArgs& args, const std::vector<std::string>& directives, const std::string& where);

struct SbatchSizing {
  std::optional<MiB> mem_mib;  // the estimate; none = let job_submit.lua apply the site default
  std::string estimator;       // "history", "allocsim", "user", …
  std::string explanation;
  std::string fingerprint;
};

struct SbatchPlan {
  std::vector<std::string> argv;  // sbatch … script args
  std::string summary;            // one line for the user: what was asked for and why
};
// Throws colo::UserError when the estimate is more than one GPU and the site rejects oversize.
SbatchPlan plan_sbatch(const SbatchArgs& args, const SbatchSizing& sizing, const SiteSettings& site);

}  // namespace colo::slurm
