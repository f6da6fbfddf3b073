#pragma once
// What `colo slurm conf` writes for one node: gres.conf (GPUs by File= lines, AutoDetect=off:
// Debian's Slurm has no NVML plugin), the slurm.conf lines colo needs, the site settings and
// job_submit.lua with those settings baked in.
#include <string>
#include <vector>

#include "core/units.h"
#include "slurm/site_settings.h"

namespace colo::slurm {

struct NodeGpu {
  int index = 0;
  MiB total_mib = 0;
  std::string name;
};

struct NodeConf {
  std::string node;                     // NodeName
  std::vector<NodeGpu> gpus;
  std::string device_prefix = "/dev/nvidia";  // File=<prefix><index>
  std::string colo_binary;              // for the task prolog
  std::string site_path;                // where colo-slurm.toml will live on the node
};

std::string gres_conf(const NodeConf& n, const SiteSettings& s);
std::string slurm_conf_fragment(const NodeConf& n, const SiteSettings& s);
// The task prolog script (nodes running MPS): `colo slurm task-prolog` as the job's user.
std::string task_prolog_script(const NodeConf& n);
// `s` as one /bin/sh word (single quotes): paths with blanks, quotes or $ stay one argument.
std::string shell_word(const std::string& s);
// The shipped job_submit.lua template with the site's settings substituted. Throws
// colo::UserError when the template cannot be found or has no @COLO_SETTINGS@ line.
std::string job_submit_lua(const SiteSettings& s, const std::string& template_text);
std::string job_submit_lua_template_path();

}  // namespace colo::slurm
