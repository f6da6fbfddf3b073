#pragma once
// The node's GPUs as colo's Slurm settings say to see them: NVML (the site's library), or the
// in-tree fake GPUs in tests and demos. Used by `colo run` (a job's peak) and
// `colo slurm node-weight` (the node's load).
#include <memory>
#include <string>

#include "gpu/backend.h"
#include "slurm/site_settings.h"

namespace colo::slurm {

// null when the GPUs cannot be opened (`why` says why). With fake GPUs, also exports
// COLO_FAKE_NVML_GPUS/DIR so that child processes (the job's fake CUDA) see the same GPUs.
std::unique_ptr<gpu::GpuBackend> open_site_gpus(const SiteSettings& site, std::string& why);

}  // namespace colo::slurm
