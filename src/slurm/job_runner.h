#pragma once
// `colo run`: runs a job's command on a Slurm node the way colod runs it on its own server —
// its output passes through unchanged while colo keeps the tail to recognise an out-of-memory
// crash (oom_detector.h) and samples the GPU memory of the job's processes for its peak. An
// OOM exits with the site's RequeueExitHold code, so Slurm requeues and holds the job for the
// recovery agent.
#include <optional>
#include <string>
#include <vector>

#include "core/units.h"
#include "daemon/oom_detector.h"

namespace colo::gpu {
class GpuBackend;
}

namespace colo::slurm {

struct RunResult {
  int status = 0;                  // the command's exit code, or 128 + signal
  std::optional<daemon::OomEvidence> oom;
  std::optional<MiB> peak_mib;     // largest per-GPU memory of the job's processes
};

// Runs argv (PATH lookup) with stdout/stderr passed through; `gpus` are the NVML indices to
// watch with `backend` (null = no peak). Forwards SIGTERM, SIGINT, SIGHUP, SIGUSR1 and SIGUSR2
// to the command. Throws colo::UserError when the command cannot be started.
RunResult run_and_watch(const std::vector<std::string>& argv, gpu::GpuBackend* backend, const std::vector<int>& gpus,
                        double sample_seconds);

// The exit code colo run ends with: the hold code on an OOM; a command that exits with the hold
// code without an OOM gets 1 instead (it must not be mistaken for one), anything else unchanged.
int exit_code_for(const RunResult& r, int hold_exit_code);

// NVML indices of the job's GPUs from SLURM_JOB_GPUS or CUDA_VISIBLE_DEVICES ("0,2"); UUIDs
// and MIG names are not indices and yield nothing.
std::vector<int> job_gpu_indices(const char* slurm_job_gpus, const char* cuda_visible_devices);

}  // namespace colo::slurm
