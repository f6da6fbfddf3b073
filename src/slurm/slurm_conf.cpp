#include "slurm/slurm_conf.h"

#include <fmt/format.h>

#include "common/resource_path.h"
#include "core/error.h"
#include "slurm/shard_plan.h"

namespace colo::slurm {

std::string gres_conf(const NodeConf& n, const SiteSettings& s) {
  std::string out = fmt::format(
      "# gres.conf for {} — written by `colo slurm conf`: one shard = {} MiB of GPU memory.\n"
      "# Debian's Slurm has no NVML plugin, so GPUs are listed by device file.\n"
      "AutoDetect=off\n",
      n.node, s.shard_mib);
  for (const NodeGpu& g : n.gpus)
    out += fmt::format("NodeName={} Name=gpu File={}{}   # {} ({} MiB)\n", n.node, n.device_prefix, g.index, g.name, g.total_mib);
  for (const NodeGpu& g : n.gpus)
    out += fmt::format("NodeName={} Name=shard Count={} File={}{}\n", n.node, shards_in_gpu(g.total_mib, s.shard_mib),
                       n.device_prefix, g.index);
  return out;
}

std::string slurm_conf_fragment(const NodeConf& n, const SiteSettings& s) {
  int shards = 0;
  for (const NodeGpu& g : n.gpus) shards += shards_in_gpu(g.total_mib, s.shard_mib);
  std::string out = fmt::format(
      "# slurm.conf lines for colo — written by `colo slurm conf`. Merge them into slurm.conf:\n"
      "GresTypes=gpu,shard\n"
      "SelectType=select/cons_tres\n"
      "JobSubmitPlugins=lua               # job_submit.lua beside slurm.conf sizes shard requests\n"
      "RequeueExitHold={}                 # `colo run` exits with this on an OOM; colo slurm recover releases the job\n",
      s.hold_exit_code);
  if (s.mps) out += fmt::format("TaskProlog={}/colo-task-prolog   # pins each job's MPS memory limit to its shards\n",
                                n.site_path.empty() ? "/etc/colo" : n.site_path.substr(0, n.site_path.rfind('/')));
  out += fmt::format("# add to this node's NodeName line:\n#   NodeName={} Gres=gpu:{},shard:{}\n", n.node, n.gpus.size(), shards);
  return out;
}

// One shell word whatever the text holds: single-quoted, a ' written as '\''.
std::string shell_word(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string task_prolog_script(const NodeConf& n) {
  return fmt::format(
      "#!/bin/sh\n"
      "# Slurm TaskProlog (written by `colo slurm conf --mps`): runs as the job's user before each task;\n"
      "# the `export` lines it prints set the task's environment.\n"
      "exec {} slurm task-prolog --site {}\n",
      shell_word(n.colo_binary), shell_word(n.site_path));
}

std::string job_submit_lua_template_path() { return resource_path("COLO_SLURM_FILES", "slurm", "job_submit.lua"); }

std::string job_submit_lua(const SiteSettings& s, const std::string& template_text) {
  const std::string marker = "@COLO_SETTINGS@";
  const size_t at = template_text.find(marker);
  if (at == std::string::npos) throw UserError("job_submit.lua template has no @COLO_SETTINGS@ line");
  const std::string settings = fmt::format(
      "{{ shard_mib = {}, shards_per_gpu = {}, margin = {}, default_shards = {}, oversize = \"{}\" }}", s.shard_mib,
      s.shards_per_gpu, s.margin, s.effective_default_shards(), s.oversize);
  std::string out = template_text;
  out.replace(at, marker.size(), settings);
  return out;
}

}  // namespace colo::slurm
