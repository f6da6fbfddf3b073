#pragma once
// NVIDIA MPS: one control daemon per managed GPU, each with its own pipe and log directory,
// started with CUDA_VISIBLE_DEVICES set to that GPU. Jobs placed on the GPU get the same pipe
// and log directories in their environment and become MPS clients.
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace colo::gpu {

struct MpsOptions {
  // Control binary; tests point it at a fake script that records what it was asked.
  std::string control_binary = "nvidia-cuda-mps-control";
  // Per-GPU directories go below this: <root>/<uuid>/pipe and <root>/<uuid>/log.
  std::string root_dir = "/run/colo/mps";
};

class MpsDaemon {
 public:
  MpsDaemon(MpsOptions opts, std::string gpu_uuid);
  ~MpsDaemon();  // stops it if still running (errors are swallowed here, not in stop())
  MpsDaemon(const MpsDaemon&) = delete;
  MpsDaemon& operator=(const MpsDaemon&) = delete;

  // `nvidia-cuda-mps-control -d` with CUDA_VISIBLE_DEVICES, CUDA_MPS_PIPE_DIRECTORY and
  // CUDA_MPS_LOG_DIRECTORY set; creates the directories. Throws GpuError (call
  // "nvidia-cuda-mps-control -d") when it cannot be run or exits non-zero.
  void start();
  // `echo quit | nvidia-cuda-mps-control` with the same directories. Throws GpuError.
  void stop();
  bool running() const { return running_; }

  const std::string& pipe_dir() const { return pipe_dir_; }
  const std::string& log_dir() const { return log_dir_; }
  // Variables a client job needs: CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_LOG_DIRECTORY.
  std::vector<std::pair<std::string, std::string>> client_env() const;

 private:
  MpsOptions opts_;
  std::string uuid_;
  std::string pipe_dir_;
  std::string log_dir_;
  bool running_ = false;
};

}  // namespace colo::gpu
