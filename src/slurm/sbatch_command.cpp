#include "slurm/sbatch_command.h"

#include <algorithm>
#include <array>
#include <string_view>

#include <fmt/format.h>

#include "core/error.h"
#include "core/one_line.h"
#include "core/split_list.h"
#include "slurm/job_comment.h"
#include "slurm/shard_plan.h"

namespace colo::slurm {

namespace {

// sbatch 22.05's options that take no value (or only an optional one, given as --opt=value).
constexpr std::array<std::string_view, 34> kFlags{
    "-h", "--help", "-H", "--hold", "--ignore-pbs", "-O", "--overcommit", "-s", "--oversubscribe", "--parsable",
    "-Q", "--quiet", "--requeue", "--no-requeue", "--reboot", "--spread-job", "--test-only", "--usage", "-V",
    "--version", "-v", "--verbose", "-W", "--wait", "--exclusive", "--contiguous", "--use-min-nodes",
    "--get-user-env", "--propagate", "-k", "--no-kill", "-I", "--immediate", "--nice"};
constexpr std::string_view kFlagLetters = "hHOsQVvWkI";  // the short ones above

bool is_flag(const std::string& a) {
  for (auto f : kFlags)
    if (a == f) return true;
  // a cluster of short flags, as getopt reads it: -vvv, -Hv
  return a.size() > 2 && a[0] == '-' && a[1] != '-' && a.find_first_not_of(kFlagLetters, 1) == std::string::npos;
}

// The long options colo reads or replaces. sbatch (getopt_long) also takes any unambiguous
// prefix (--comm for --comment), which would slip past colo: such prefixes are refused.
constexpr std::array<std::string_view, 8> kWatched{"--comment", "--wrap",           "--gres",            "--gpus",
                                                   "--gpus-per-node", "--gpus-per-task", "--gpus-per-socket",
                                                   "--tres-per-task"};

bool is_gpu_request(std::string_view name) {
  return name == "--gpus" || name == "-G" || name == "--gpus-per-node" || name == "--gpus-per-task" ||
         name == "--gpus-per-socket" || name == "--tres-per-task";
}

// A --gres item that asks for GPU memory or GPUs (what colo sizes): gpu, shard, mps — also
// written with the TRES prefix (gres:gpu:1, gres/gpu:1), which Slurm reads as the same item.
bool is_gpu_gres(std::string_view item) {
  if (item.rfind("gres:", 0) == 0 || item.rfind("gres/", 0) == 0) item.remove_prefix(5);
  const std::string_view name = item.substr(0, item.find(':'));
  return name == "gpu" || name == "shard" || name == "mps";
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
    const bool long_opt = a.rfind("--", 0) == 0;
    std::string name, value;
    bool has_value = false, attached = false;
    if (long_opt) {
      const size_t eq = a.find('=');
      name = a.substr(0, eq);
      has_value = eq != std::string::npos;
      if (has_value) value = a.substr(eq + 1);
      const bool watched = std::find(kWatched.begin(), kWatched.end(), name) != kWatched.end();
      for (std::string_view w : kWatched)
        if (!watched && name.size() < w.size() && w.substr(0, name.size()) == name && name.size() > 2)
          throw UserError(fmt::format("'{}': give sbatch options in full (colo reads {}; an abbreviation would slip past it)",
                                      one_line(name), w));
    } else if (!is_flag(a)) {
      // -N1, -pmain, -c8: getopt's short option with its value attached
      if (a.size() > 2 && kFlagLetters.find(a[1]) != std::string_view::npos)
        throw UserError(fmt::format("'{}': write the short options separately (e.g. -H -p main)", one_line(a)));
      name = a.substr(0, 2);
      has_value = attached = a.size() > 2;
      if (has_value) value = a.substr(2);
    } else {
      name = a;
    }
    if (!has_value && !is_flag(a)) {
      if (i + 1 >= args.size()) throw UserError(fmt::format("sbatch option '{}' needs a value", one_line(a)));
      value = args[++i];
    }
    if (is_gpu_request(name))
      throw UserError(fmt::format("'{}': colo sbatch sizes the GPU share from the estimate; drop the option "
                                  "(or give --gpu-mem), or use plain sbatch", one_line(name)));
    if (name == "--gres") {
      out.gres_given = true;
      // Other generic resources (a local disk, a licence) are the user's; GPUs are colo's to size.
      for (const std::string& item : split_list(value)) {
        if (item.empty() || item == "none") continue;
        if (is_gpu_gres(item))
          throw UserError(fmt::format("'--gres={}': colo sbatch sizes the GPU share from the estimate; drop the GPU item "
                                      "(or give --gpu-mem), or use plain sbatch", one_line(value)));
        out.other_gres.push_back(item);
      }
      continue;
    }
    if (name == "--comment") {
      out.comment_given = true;
      out.user_comment = value;
      continue;
    }
    if (name == "--wrap") out.wrap = value;
    if (has_value && (long_opt || attached)) out.options.push_back(a);
    else if (is_flag(a)) out.options.push_back(a);
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

std::vector<std::string> script_directives(const std::string& text) {
  std::vector<std::string> out;
  std::size_t line_no = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos) continue;  // blank
    if (line[first] != '#') break;                  // the first command: no directives after it
    if (first != 0 || line.rfind("#SBATCH", 0) != 0) continue;  // another comment (or the shebang)
    std::string_view rest = line.substr(7);
    if (!rest.empty() && rest[0] != ' ' && rest[0] != '\t') continue;  // "#SBATCHX": a comment
    std::string word;
    bool in_word = false;
    for (std::size_t i = 0; i < rest.size(); ++i) {
      const char c = rest[i];
      if (c == ' ' || c == '\t') {
        if (in_word) out.push_back(word), word.clear(), in_word = false;
        continue;
      }
      if (c == '#' && !in_word) break;  // a comment after the options
      in_word = true;
      if (c == '\'' || c == '"') {
        const std::size_t close = rest.find(c, i + 1);
        if (close == std::string_view::npos)
          throw UserError(fmt::format("line {}: #SBATCH: unclosed {} quote", line_no, c));
        word.append(rest.substr(i + 1, close - i - 1));
        i = close;
        continue;
      }
      word.push_back(c);
    }
    if (in_word) out.push_back(word);
  }
  return out;
}

void apply_script_directives(SbatchArgs& args, const std::vector<std::string>& directives, const std::string& where) {
  if (directives.empty()) return;
  std::vector<std::string> as_args = directives;
  as_args.push_back("<script>");  // what split_sbatch_args expects after the options
  SbatchArgs script;
  try {
    script = split_sbatch_args(as_args);
  } catch (const UserError& e) {
    throw UserError(fmt::format("{}: {}", where, e.what()));
  }
  if (args.other_gres.empty() && !args.gres_given) args.other_gres = script.other_gres;
  if (args.user_comment.empty() && !args.comment_given) args.user_comment = script.user_comment;
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
  for (const std::string& item : args.other_gres) gres += "," + item;
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
