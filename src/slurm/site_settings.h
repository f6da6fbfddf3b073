#pragma once
// colo's settings for one Slurm cluster, in one TOML file that `colo slurm conf` writes and that
// `colo sbatch`, `colo run`, `colo slurm recover` and `colo slurm task-prolog` read (the same
// numbers are baked into the generated job_submit.lua). Found at --site FILE, else
// $COLO_SLURM_SITE, else /etc/colo/slurm.toml.
#include <string>

#include "core/units.h"

namespace colo::slurm {

struct SiteSettings {
  MiB shard_mib = kGiB;     // one gres/shard is this much GPU memory
  int shards_per_gpu = 0;   // shards of the smallest GPU (a larger request cannot share one)
  double margin = 0.10;     // added to an estimate before it becomes shards (assumption, as colod's)
  int default_shards = 0;   // a size-less shard request gets this many (0 = a quarter of a GPU)
  std::string oversize = "whole_gpu";  // a request above one GPU's shards: "whole_gpu" or "reject"
  int hold_exit_code = 75;  // slurm.conf RequeueExitHold: `colo run` exits with it on an OOM
  std::string state_dir = "/var/lib/colo-slurm";  // agent state, history, attempt reports
  MiB step_mib = 5 * kGiB;  // loose recovery (thesis §7.2): each OOM adds this much
  int max_retries = 3;      // OOM requeues before the agent gives up and leaves the job held
  bool mps = false;         // nodes run MPS: the task prolog pins each job's memory limit
  double smact_cap = 0.80;  // colo slurm node-weight: GPUs at or above it have no SM headroom (thesis)
  // colo run's view of the GPUs (the job's peak memory): NVML library, or the in-tree fake.
  std::string nvml_library;  // "" = libnvidia-ml.so.1
  std::string fake_gpus;     // a fake GPU spec (tests, demos); "" = real NVML
  std::string fake_gpu_dir;  // the fake GPUs' state directory (with fake_gpus)
  double sample_seconds = 1.0;  // colo run's memory sampling period

  int effective_default_shards() const { return default_shards > 0 ? default_shards : std::max(1, shards_per_gpu / 4); }
  std::string to_toml() const;
};

// Reads and checks a settings file; colo::UserError naming the file, line and key otherwise.
SiteSettings load_site_settings(const std::string& path);
// Why `code` cannot be the RequeueExitHold code ("" when it can): a code that ordinary failures
// exit with would hold and escalate jobs that never ran out of memory.
std::string hold_exit_code_problem(int code);
// --site, else $COLO_SLURM_SITE, else /etc/colo/slurm.toml.
std::string site_settings_path(const std::string& flag);

}  // namespace colo::slurm
