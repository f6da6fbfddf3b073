#pragma once
// The one interface colod uses to see GPUs. Implementations: the NVML backend (nvml_backend.h),
// which dlopen()s libnvidia-ml.so.1 — or, for tests and `colod --fake-gpus`, the in-tree fake
// NVML library through exactly the same code path (fake_nvml_env.h).
//
// Units: memory in MiB (as nvidia-smi shows it), ratios in 0..1, power in W, energy in mJ.
// A backend is NOT thread-safe by contract: the daemon's monitor loop owns it. (The NVML
// backend does lock internally, so a stray call from another thread is harmless.)
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/units.h"

namespace colo::gpu {

// A failing GPU call. The daemon counts it against the named device (a device that keeps
// failing is marked unhealthy, taken out of scheduling and re-probed); it never takes the
// daemon down. `device` is "GPU 1 (GPU-…uuid)" or "library" for init/discovery.
class GpuError : public std::runtime_error {
 public:
  GpuError(std::string device, std::string call, const std::string& detail);
  const std::string& device() const { return device_; }
  const std::string& call() const { return call_; }  // e.g. "nvmlDeviceGetMemoryInfo"
  // NVML device index the error belongs to, or -1 when it is not about one device.
  int index() const { return index_; }
  GpuError& with_index(int index) {
    index_ = index;
    return *this;
  }
  // The NVML return code, or 0 when the error is not an NVML return code.
  int code() const { return code_; }
  GpuError& with_code(int code) {
    code_ = code;
    return *this;
  }

 private:
  std::string device_;
  std::string call_;
  int index_ = -1;
  int code_ = 0;
};

// How SM activity (SMACT) and SM occupancy (SMOCC) can be measured on a device.
enum class SmactPath {
  NvmlGpm,     // NVML GPU Performance Monitoring (Hopper and newer)
  Dcgm,        // DCGM profiling fields (DCGM_FI_PROF_SM_ACTIVE / _OCCUPANCY)
  Unavailable  // policies fall back to memory-only conditions
};
const char* to_string(SmactPath p);

struct Capabilities {
  SmactPath smact_path = SmactPath::Unavailable;
  // Human-readable, one line, for the daemon log: why this path (or why none), e.g.
  // "NVML GPM not supported on this device (pre-Hopper); libdcgm.so.3 not found".
  std::string smact_reason;
  bool power = false;   // nvmlDeviceGetPowerUsage answered
  bool energy = false;  // nvmlDeviceGetTotalEnergyConsumption answered
};

// One MIG instance (GPU instance + compute instance) as NVML exposes it: a device of its own.
struct MigInstanceInfo {
  int index = 0;        // MIG device index within its parent (nvmlDeviceGetMigDeviceHandleByIndex)
  std::string uuid;     // "MIG-…" — what CUDA_VISIBLE_DEVICES takes
  std::string name;     // e.g. "NVIDIA A100-SXM4-80GB MIG 3g.40gb"
  MiB total_mib = 0;
};

struct DeviceInfo {
  int index = 0;     // NVML index
  std::string uuid;  // "GPU-…"
  std::string name;  // e.g. "NVIDIA A100-SXM4-40GB"
  MiB total_mib = 0;
  bool mig_enabled = false;                    // current MIG mode
  std::vector<MigInstanceInfo> mig_instances;  // empty unless mig_enabled
  Capabilities caps;
  // Non-empty when this device failed during discovery (the GpuError text): the other
  // devices are still reported; the daemon marks this one unhealthy and re-probes it. `uuid`
  // is still set when nvmlDeviceGetUUID answered before the failing call, else empty.
  std::string error;
};

// Memory of one device or MIG instance, with the processes using it.
struct MemorySample {
  MiB total_mib = 0;
  MiB used_mib = 0;
  std::map<int, MiB> process_mib;  // pid -> used MiB (compute processes)
};

struct MigSample {
  int index = 0;
  std::string uuid;
  MemorySample memory;
};

struct DeviceSample {
  int index = 0;
  std::string uuid;
  MemorySample memory;                    // whole GPU; process_mib is empty on MIG-enabled GPUs
  std::vector<MigSample> mig;             // one per MIG instance (mig_enabled only)
  std::optional<double> gpu_util;         // nvmlUtilization_t.gpu / 100
  std::optional<double> mem_util;         // nvmlUtilization_t.memory / 100
  std::optional<double> power_w;          // nvmlDeviceGetPowerUsage / 1000
  std::optional<std::uint64_t> energy_mj; // since driver load (monotonic)
  // SM activity / occupancy (0..1) over the interval since the previous sample() of this
  // device. nullopt when not measurable, and on the first sample of a GPM device (GPM
  // needs two samples to form a rate).
  std::optional<double> smact;
  std::optional<double> smocc;
  // Optional metrics whose call failed with a real error this time (not "unsupported"):
  // field ("utilization", "power", "energy", "smact") -> the error text. The field is nullopt
  // for this sample; the device itself is fine (a lost GPU throws instead).
  std::map<std::string, std::string> metric_errors;
};

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;

  // "nvml (libnvidia-ml.so.1, driver 550.54.15)" — for logs and `colo gpus`.
  virtual std::string describe() const = 0;

  // All devices with their MIG instances and capabilities. A device whose calls fail is
  // still listed, with `error` set (index known, other fields may be empty). Throws GpuError
  // (device "library") only when the device list itself cannot be read.
  virtual std::vector<DeviceInfo> discover() = 0;

  // Discovery of one device, e.g. to re-probe a device that failed during discover(): the
  // same DeviceInfo discover() lists for it (with `error` set when its calls fail). Throws
  // GpuError when `index` cannot be looked at at all. The default runs discover().
  virtual DeviceInfo discover_device(int index);

  // One sample of device `index` (NVML index). Throws GpuError naming the device and call when
  // an essential call fails (identity, memory, process list, MIG layout) or the GPU is lost;
  // optional metrics the device does not support are nullopt, optional metrics whose call
  // failed otherwise are nullopt and named in `metric_errors`.
  virtual DeviceSample sample(int index) = 0;

  virtual Capabilities capabilities(int index) = 0;

  // The most memory process `pid` has held on device `index`, from NVML's accounting (kept by
  // the driver after the process exits, so no sample can miss the peak). nullopt when
  // accounting mode is off or unsupported, or the driver has no record of the process.
  virtual std::optional<MiB> process_peak_mib(int index, int pid) {
    (void)index;
    (void)pid;
    return std::nullopt;
  }
};

}  // namespace colo::gpu
