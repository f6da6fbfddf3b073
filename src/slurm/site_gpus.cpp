#include "slurm/site_gpus.h"

#include <cstdlib>

#include "core/one_line.h"
#include "gpu/fake_nvml_env.h"
#include "gpu/nvml_backend.h"

namespace colo::slurm {

std::unique_ptr<gpu::GpuBackend> open_site_gpus(const SiteSettings& site, std::string& why) {
  gpu::NvmlOptions opts;
  opts.dcgm_mode = "off";  // memory and NVML's own SMACT (GPM) only: no DCGM host engine here
  if (!site.fake_gpus.empty()) {
    // The fake GPUs' state directory exists already (colo slurm conf made it).
    ::setenv("COLO_FAKE_NVML_GPUS", site.fake_gpus.c_str(), 1);
    ::setenv("COLO_FAKE_NVML_DIR", site.fake_gpu_dir.c_str(), 1);
    opts.library = gpu::fake_nvml_library_path();
  } else if (!site.nvml_library.empty()) {
    opts.library = site.nvml_library;
  }
  try {
    return gpu::open_nvml_backend(opts);
  } catch (const std::exception& e) {
    why = one_line(e.what());
    return nullptr;
  }
}

}  // namespace colo::slurm
