// The NVML backend: every NVML function is resolved with dlsym from a dlopen()ed library, so the
// same code drives the real libnvidia-ml.so.1 and the in-tree fake.
#include "gpu/nvml_backend.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "gpu/dcgm_sampler.h"
#include "gpu/nvml_api.h"

namespace colo::gpu {
namespace {

constexpr unsigned long long kBytesPerMiB = 1024ULL * 1024ULL;

MiB to_mib(unsigned long long bytes) { return static_cast<MiB>(bytes / kBytesPerMiB); }

// Errors that mean the device (or the driver) is gone, whichever call reported them: even an
// optional metric failing this way is a failure of the device, not a missing value.
bool device_fatal(int r) {
  switch (r) {
    case NVML_ERROR_UNINITIALIZED:
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_GPU_IS_LOST:
    case NVML_ERROR_RESET_REQUIRED:
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return true;
    default:
      return false;
  }
}

// Resolved entry points. Required ones make open fail when missing; optional ones (newer or
// feature-specific) just switch a feature off.
struct NvmlApi {
  nvmlInit_v2_fn init = nullptr;
  nvmlShutdown_fn shutdown = nullptr;
  nvmlErrorString_fn error_string = nullptr;
  nvmlSystemGetDriverVersion_fn driver_version = nullptr;  // optional
  nvmlDeviceGetCount_v2_fn count = nullptr;
  nvmlDeviceGetHandleByIndex_v2_fn handle_by_index = nullptr;
  nvmlDeviceGetUUID_fn uuid = nullptr;
  nvmlDeviceGetName_fn name = nullptr;
  nvmlDeviceGetMemoryInfo_fn memory = nullptr;
  nvmlDeviceGetComputeRunningProcesses_fn processes = nullptr;  // _v3, else _v2
  const char* processes_symbol = "";
  // Bytes per process-list entry: sizeof(nvmlProcessInfo_t) (24), except the _v3 of drivers
  // 535.43.02-535.86.x, which write 32 (usedGpuCcProtectedMemory appended, no version bump).
  std::size_t process_stride = sizeof(nvmlProcessInfo_t);
  nvmlDeviceGetUtilizationRates_fn utilization = nullptr;
  nvmlDeviceGetPowerUsage_fn power = nullptr;
  nvmlDeviceGetTotalEnergyConsumption_fn energy = nullptr;
  nvmlDeviceGetMigMode_fn mig_mode = nullptr;                       // optional (pre-r450)
  nvmlDeviceGetMaxMigDeviceCount_fn max_mig = nullptr;              // optional
  nvmlDeviceGetMigDeviceHandleByIndex_fn mig_handle = nullptr;      // optional
  nvmlGpmQueryDeviceSupport_fn gpm_support = nullptr;               // optional (pre-r520)
  nvmlGpmSampleAlloc_fn gpm_alloc = nullptr;
  nvmlGpmSampleFree_fn gpm_free = nullptr;
  nvmlGpmSampleGet_fn gpm_get = nullptr;
  nvmlGpmMetricsGet_fn gpm_metrics = nullptr;
  nvmlDeviceGetAccountingMode_fn accounting_mode = nullptr;    // optional
  nvmlDeviceGetAccountingStats_fn accounting_stats = nullptr;  // optional

  bool has_mig() const { return mig_mode && max_mig && mig_handle; }
  bool has_gpm() const { return gpm_support && gpm_alloc && gpm_free && gpm_get && gpm_metrics; }
};

template <typename Fn>
void resolve(void* lib, const std::string& lib_name, const char* symbol, Fn& out) {
  out = reinterpret_cast<Fn>(dlsym(lib, symbol));
  if (!out) {
    throw GpuError("library", "dlsym",
                   lib_name + " has no symbol " + symbol + " (driver too old or not NVML?)");
  }
}

template <typename Fn>
void resolve_optional(void* lib, const char* symbol, Fn& out) {
  out = reinterpret_cast<Fn>(dlsym(lib, symbol));
}

// Per-device GPM state: the previous sample, so each sample() yields the rate since the last.
struct GpmState {
  nvmlGpmSample_t prev = nullptr;
  nvmlGpmSample_t cur = nullptr;
  bool have_prev = false;
};

class NvmlBackend final : public GpuBackend {
 public:
  explicit NvmlBackend(const NvmlOptions& opts) : opts_(opts) {
    lib_ = dlopen(opts.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib_) {
      const char* why = dlerror();
      throw GpuError("library", "dlopen",
                     opts.library + " could not be loaded (" + (why ? why : "unknown reason") +
                         "); is the NVIDIA driver installed?");
    }
    try {
      resolve_all();
      check_library(api_.init(), "nvmlInit_v2");
    } catch (...) {
      dlclose(lib_);
      throw;
    }
    if (api_.driver_version) {
      char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
      if (api_.driver_version(buf, sizeof buf) == NVML_SUCCESS) driver_ = buf;
    }
    detect_dcgm();
  }

  ~NvmlBackend() override {
    for (auto& [index, st] : gpm_) {
      if (st.prev) api_.gpm_free(st.prev);
      if (st.cur) api_.gpm_free(st.cur);
    }
    api_.shutdown();
    dlclose(lib_);
  }

  NvmlBackend(const NvmlBackend&) = delete;
  NvmlBackend& operator=(const NvmlBackend&) = delete;

  std::string describe() const override {
    std::string s = "nvml (" + opts_.library;
    if (!driver_.empty()) s += ", driver " + driver_;
    return s + ")";
  }

  std::vector<DeviceInfo> discover() override {
    std::lock_guard lock(mu_);
    unsigned int n = 0;
    check_library(api_.count(&n), "nvmlDeviceGetCount_v2");
    std::vector<DeviceInfo> out;
    for (unsigned int i = 0; i < n; ++i) out.push_back(discover_or_error(static_cast<int>(i)));
    return out;
  }

  DeviceInfo discover_device(int index) override {
    std::lock_guard lock(mu_);
    unsigned int n = 0;
    check_library(api_.count(&n), "nvmlDeviceGetCount_v2");
    if (index < 0 || static_cast<unsigned int>(index) >= n)
      throw GpuError(device_label(index), "nvmlDeviceGetCount_v2",
                     "no device " + std::to_string(index) + " (" + std::to_string(n) + " present)");
    return discover_or_error(index);
  }

  std::optional<MiB> process_peak_mib(int index, int pid) override {
    std::lock_guard lock(mu_);
    if (!api_.accounting_mode || !api_.accounting_stats || pid <= 0) return std::nullopt;
    nvmlDevice_t dev = handle(index);
    nvmlEnableState_t mode = NVML_FEATURE_DISABLED;
    if (api_.accounting_mode(dev, &mode) != NVML_SUCCESS || mode != NVML_FEATURE_ENABLED) return std::nullopt;
    nvmlAccountingStats_t st{};
    if (api_.accounting_stats(dev, static_cast<unsigned int>(pid), &st) != NVML_SUCCESS) return std::nullopt;
    // "NVML_VALUE_NOT_AVAILABLE if usedGpuMemory is not supported" (nvml.h): no record, not 0 MiB.
    if (st.maxMemoryUsage == NVML_VALUE_NOT_AVAILABLE) return std::nullopt;
    return static_cast<MiB>((st.maxMemoryUsage + (1ULL << 20) - 1) >> 20);
  }

  DeviceSample sample(int index) override {
    std::lock_guard lock(mu_);
    nvmlDevice_t dev = handle(index);
    DeviceSample s;
    s.index = index;
    s.uuid = uuid_of(dev, index);
    s.memory = memory_of(dev, index);
    if (mig_enabled(dev, index)) {
      // Per-process memory is per MIG instance: the parent handle only answers for root.
      for (auto& [mig_index, mig_dev] : mig_devices(dev, index)) {
        MigSample m;
        m.index = mig_index;
        m.uuid = uuid_of(mig_dev, index);
        m.memory = memory_of(mig_dev, index);
        m.memory.process_mib = processes_of(mig_dev, index);
        s.mig.push_back(std::move(m));
      }
    } else {
      s.memory.process_mib = processes_of(dev, index);
    }

    nvmlUtilization_t util{};
    if (optional_call(api_.utilization(dev, &util), index, "nvmlDeviceGetUtilizationRates", "utilization", s)) {
      s.gpu_util = util.gpu / 100.0;
      s.mem_util = util.memory / 100.0;
    }
    unsigned int mw = 0;
    if (optional_call(api_.power(dev, &mw), index, "nvmlDeviceGetPowerUsage", "power", s)) {
      s.power_w = mw / 1000.0;
    }
    unsigned long long mj = 0;
    if (optional_call(api_.energy(dev, &mj), index, "nvmlDeviceGetTotalEnergyConsumption", "energy", s)) {
      s.energy_mj = mj;
    }
    try {
      sample_gpm(dev, index, s);
      if (!s.smact && dcgm_ && dcgm_->watching(index)) {
        const DcgmReading r = dcgm_->read(index);
        s.smact = r.smact;
        s.smocc = r.smocc;
      }
    } catch (const GpuError& e) {
      // SMACT is optional too: unmeasured this round, the rate starts over next time.
      if (device_fatal(e.code())) throw;
      s.smact.reset();
      s.smocc.reset();
      s.metric_errors["smact"] = e.what();
      gpm_[index].have_prev = false;
    }
    return s;
  }

  Capabilities capabilities(int index) override {
    std::lock_guard lock(mu_);
    return capabilities_locked(handle(index), index);
  }

 private:
  // One failing GPU must not hide the others: it is listed with its error (and its UUID when
  // that call answered before the failing one).
  DeviceInfo discover_or_error(int index) {
    try {
      return discover_one(index);
    } catch (const GpuError& e) {
      DeviceInfo d;
      d.index = index;
      if (auto it = uuids_.find(index); it != uuids_.end()) d.uuid = it->second;
      d.error = e.what();
      return d;
    }
  }

  DeviceInfo discover_one(int index) {
    nvmlDevice_t dev = handle(index);
    DeviceInfo d;
    d.index = index;
    d.uuid = uuid_of(dev, index);
    d.name = name_of(dev, index);
    d.total_mib = memory_of(dev, index).total_mib;
    d.mig_enabled = mig_enabled(dev, index);
    if (d.mig_enabled) {
      for (auto& [mig_index, mig_dev] : mig_devices(dev, index)) {
        MigInstanceInfo m;
        m.index = mig_index;
        m.uuid = uuid_of(mig_dev, index);
        m.name = name_of(mig_dev, index);
        m.total_mib = memory_of(mig_dev, index).total_mib;
        d.mig_instances.push_back(std::move(m));
      }
    }
    d.caps = capabilities_locked(dev, index);
    return d;
  }

  void resolve_all() {
    const std::string& L = opts_.library;
    resolve(lib_, L, "nvmlInit_v2", api_.init);
    resolve(lib_, L, "nvmlShutdown", api_.shutdown);
    resolve(lib_, L, "nvmlErrorString", api_.error_string);
    resolve_optional(lib_, "nvmlSystemGetDriverVersion", api_.driver_version);
    resolve(lib_, L, "nvmlDeviceGetCount_v2", api_.count);
    resolve(lib_, L, "nvmlDeviceGetHandleByIndex_v2", api_.handle_by_index);
    resolve(lib_, L, "nvmlDeviceGetUUID", api_.uuid);
    resolve(lib_, L, "nvmlDeviceGetName", api_.name);
    resolve(lib_, L, "nvmlDeviceGetMemoryInfo", api_.memory);
    resolve_optional(lib_, "nvmlDeviceGetComputeRunningProcesses_v3", api_.processes);
    api_.processes_symbol = "nvmlDeviceGetComputeRunningProcesses_v3";
    if (!api_.processes) {
      resolve(lib_, L, "nvmlDeviceGetComputeRunningProcesses_v2", api_.processes);
      api_.processes_symbol = "nvmlDeviceGetComputeRunningProcesses_v2";
    } else if (dlsym(lib_, "nvmlDeviceGetConfComputeMemSizeInfo") &&
               !dlsym(lib_, "nvmlDeviceGetRunningProcessDetailList")) {
      // How those drivers are told apart (as nvitop does, PR #89): they added the confidential-
      // computing calls (535.43.02) before the process-detail list that came with the fixed
      // 24-byte _v3 (535.104.05). Source: NVIDIA's nvml.h of 535.43.02 vs 535.104.05.
      api_.process_stride = sizeof(nvmlProcessInfo_t) + sizeof(unsigned long long);
    }
    resolve(lib_, L, "nvmlDeviceGetUtilizationRates", api_.utilization);
    resolve(lib_, L, "nvmlDeviceGetPowerUsage", api_.power);
    resolve(lib_, L, "nvmlDeviceGetTotalEnergyConsumption", api_.energy);
    resolve_optional(lib_, "nvmlDeviceGetMigMode", api_.mig_mode);
    resolve_optional(lib_, "nvmlDeviceGetMaxMigDeviceCount", api_.max_mig);
    resolve_optional(lib_, "nvmlDeviceGetMigDeviceHandleByIndex", api_.mig_handle);
    resolve_optional(lib_, "nvmlGpmQueryDeviceSupport", api_.gpm_support);
    resolve_optional(lib_, "nvmlGpmSampleAlloc", api_.gpm_alloc);
    resolve_optional(lib_, "nvmlGpmSampleFree", api_.gpm_free);
    resolve_optional(lib_, "nvmlGpmSampleGet", api_.gpm_get);
    resolve_optional(lib_, "nvmlGpmMetricsGet", api_.gpm_metrics);
    resolve_optional(lib_, "nvmlDeviceGetAccountingMode", api_.accounting_mode);
    resolve_optional(lib_, "nvmlDeviceGetAccountingStats", api_.accounting_stats);
  }

  // DCGM serves SMACT for GPUs without NVML GPM. Failing to open it is not an error: the
  // capability reason of those GPUs says why, and policies fall back to memory-only.
  void detect_dcgm() {
    try {
      dcgm_ = std::make_unique<DcgmSampler>(
          DcgmOptions{opts_.dcgm_library, opts_.dcgm_mode, opts_.dcgm_update_interval_s});
    } catch (const GpuError& e) {
      dcgm_error_ = e.what();
    }
  }

  std::string nvml_error(nvmlReturn_t r) const {
    const char* s = api_.error_string ? api_.error_string(r) : nullptr;
    return std::string(s ? s : "unknown error") + " (NVML error " + std::to_string(r) + ")";
  }

  std::string device_label(int index) const {
    std::string label = "GPU " + std::to_string(index);
    if (auto it = uuids_.find(index); it != uuids_.end()) label += " (" + it->second + ")";
    return label;
  }

  void check_library(nvmlReturn_t r, const char* call) const {
    if (r != NVML_SUCCESS) throw GpuError("library", call, nvml_error(r));
  }

  void check(nvmlReturn_t r, int index, const char* call) const {
    if (r != NVML_SUCCESS) {
      GpuError e(device_label(index), call, nvml_error(r));
      e.with_index(index).with_code(r);
      throw e;
    }
  }

  // An optional metric. NOT_SUPPORTED (and NO_DATA) mean "this device does not measure it":
  // nullopt, not an error. Any other error leaves it nullopt for this sample and is reported in
  // `metric_errors[field]`, except the ones that mean the device is gone (device_fatal).
  bool optional_call(nvmlReturn_t r, int index, const char* call, const char* field, DeviceSample& s) const {
    if (r == NVML_SUCCESS) return true;
    if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NO_DATA) return false;
    if (device_fatal(r)) check(r, index, call);
    s.metric_errors[field] = GpuError(device_label(index), call, nvml_error(r)).what();
    return false;
  }

  nvmlDevice_t handle(int index) {
    nvmlDevice_t dev = nullptr;
    if (index < 0) throw GpuError(device_label(index), "nvmlDeviceGetHandleByIndex_v2",
                                  "negative device index");
    check(api_.handle_by_index(static_cast<unsigned int>(index), &dev), index,
          "nvmlDeviceGetHandleByIndex_v2");
    return dev;
  }

  std::string uuid_of(nvmlDevice_t dev, int index) {
    char buf[NVML_DEVICE_UUID_BUFFER_SIZE] = {};
    check(api_.uuid(dev, buf, sizeof buf), index, "nvmlDeviceGetUUID");
    std::string u(buf);
    uuids_.try_emplace(index, u);  // first answer for the index is the parent's
    return u;
  }

  std::string name_of(nvmlDevice_t dev, int index) const {
    char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    check(api_.name(dev, buf, sizeof buf), index, "nvmlDeviceGetName");
    return buf;
  }

  MemorySample memory_of(nvmlDevice_t dev, int index) const {
    nvmlMemory_t m{};
    check(api_.memory(dev, &m), index, "nvmlDeviceGetMemoryInfo");
    MemorySample s;
    s.total_mib = to_mib(m.total);
    s.used_mib = to_mib(m.used);
    return s;
  }

  std::map<int, MiB> processes_of(nvmlDevice_t dev, int index) const {
    // The process list can grow between the size query and the fetch: retry a few times. The
    // buffer is sized for the driver's entry size (process_stride), read entry by entry.
    const std::size_t stride = api_.process_stride;
    std::size_t capacity = 16;
    std::vector<std::uint64_t> raw;  // 8-byte aligned, as the struct's unsigned long long needs
    for (int attempt = 0; attempt < 5; ++attempt) {
      raw.assign((capacity * stride + 7) / 8, 0);
      auto count = static_cast<unsigned int>(capacity);
      nvmlReturn_t r = api_.processes(dev, &count, reinterpret_cast<nvmlProcessInfo_t*>(raw.data()));
      if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
        capacity = std::max<std::size_t>(count + 8, capacity * 2);
        continue;
      }
      // Not supported, or (MIG instances, unprivileged caller) not permitted: no per-process
      // view, but the GPU itself is fine.
      if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NO_PERMISSION) return {};
      check(r, index, api_.processes_symbol);
      std::map<int, MiB> out;
      for (std::size_t i = 0; i < count && i < capacity; ++i) {
        nvmlProcessInfo_t info{};  // the fields both layouts share come first
        std::memcpy(&info, reinterpret_cast<const unsigned char*>(raw.data()) + i * stride, sizeof info);
        // NVML_VALUE_NOT_AVAILABLE only happens under Windows WDDM; count it as 0.
        const unsigned long long bytes = info.usedGpuMemory == NVML_VALUE_NOT_AVAILABLE ? 0 : info.usedGpuMemory;
        out[static_cast<int>(info.pid)] += to_mib(bytes);
      }
      return out;
    }
    throw GpuError(device_label(index), api_.processes_symbol,
                   "process list kept growing; gave up after 5 attempts");
  }

  bool mig_enabled(nvmlDevice_t dev, int index) const {
    if (!api_.has_mig()) return false;
    unsigned int current = 0, pending = 0;
    nvmlReturn_t r = api_.mig_mode(dev, &current, &pending);
    if (r == NVML_ERROR_NOT_SUPPORTED) return false;
    check(r, index, "nvmlDeviceGetMigMode");
    return current == NVML_DEVICE_MIG_ENABLE;
  }

  std::vector<std::pair<int, nvmlDevice_t>> mig_devices(nvmlDevice_t dev, int index) const {
    unsigned int max = 0;
    check(api_.max_mig(dev, &max), index, "nvmlDeviceGetMaxMigDeviceCount");
    std::vector<std::pair<int, nvmlDevice_t>> out;
    for (unsigned int i = 0; i < max; ++i) {
      nvmlDevice_t mig = nullptr;
      nvmlReturn_t r = api_.mig_handle(dev, i, &mig);
      if (r == NVML_ERROR_NOT_FOUND) continue;  // no instance at this slot
      check(r, index, "nvmlDeviceGetMigDeviceHandleByIndex");
      out.emplace_back(static_cast<int>(i), mig);
    }
    return out;
  }

  bool gpm_supported(nvmlDevice_t dev, int index) const {
    if (!api_.has_gpm()) return false;
    nvmlGpmSupport_t support{};
    support.version = NVML_GPM_SUPPORT_VERSION;
    nvmlReturn_t r = api_.gpm_support(dev, &support);
    if (r == NVML_ERROR_NOT_SUPPORTED) return false;
    check(r, index, "nvmlGpmQueryDeviceSupport");
    return support.isSupportedDevice != 0;
  }

  Capabilities capabilities_locked(nvmlDevice_t dev, int index) const {
    Capabilities c;
    unsigned int mw = 0;
    c.power = api_.power(dev, &mw) == NVML_SUCCESS;
    unsigned long long mj = 0;
    c.energy = api_.energy(dev, &mj) == NVML_SUCCESS;
    bool gpm = false;
    std::string gpm_error;
    try {
      gpm = gpm_supported(dev, index);
    } catch (const GpuError& e) {
      if (device_fatal(e.code())) throw;
      gpm_error = e.what();  // SMACT is optional: the device is still usable
    }
    if (gpm) {
      c.smact_path = SmactPath::NvmlGpm;
      c.smact_reason = "SM activity/occupancy from NVML GPM (nvmlGpmMetricsGet SM_UTIL, SM_OCCUPANCY)";
      return c;
    }
    std::string why = !gpm_error.empty() ? "asking for NVML GPM support failed (" + gpm_error + ")"
                      : api_.has_gpm()   ? "NVML GPM is not supported on this device (needs Hopper or newer)"
                                         : "this NVML has no GPM functions (driver older than r520)";
    if (dcgm_) {
      std::string refused;
      if (dcgm_->watch(index, refused)) {
        c.smact_path = SmactPath::Dcgm;
        c.smact_reason = "SM activity/occupancy from " + dcgm_->describe() +
                         " (DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_PROF_SM_OCCUPANCY)";
        return c;
      }
      why += "; " + dcgm_->describe() + " refused this GPU: " + refused;
    } else {
      why += "; " + dcgm_error_;
    }
    c.smact_path = SmactPath::Unavailable;
    c.smact_reason = why + ": SMACT unavailable, policies use memory-only conditions";
    return c;
  }

  void sample_gpm(nvmlDevice_t dev, int index, DeviceSample& s) {
    if (!gpm_supported(dev, index)) return;
    GpmState& st = gpm_[index];
    if (!st.cur) check(api_.gpm_alloc(&st.cur), index, "nvmlGpmSampleAlloc");
    if (!st.prev) check(api_.gpm_alloc(&st.prev), index, "nvmlGpmSampleAlloc");
    nvmlReturn_t got = api_.gpm_get(dev, st.cur);
    if (got == NVML_ERROR_NOT_SUPPORTED || got == NVML_ERROR_NO_PERMISSION) {
      // E.g. a MIG-enabled GPU whose driver wants per-instance GPM: SMACT unmeasured this round.
      st.have_prev = false;
      return;
    }
    check(got, index, "nvmlGpmSampleGet");
    if (st.have_prev) {
      nvmlGpmMetricsGet_t req{};
      req.version = NVML_GPM_METRICS_GET_VERSION;
      req.numMetrics = 2;
      req.sample1 = st.prev;
      req.sample2 = st.cur;
      req.metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
      req.metrics[1].metricId = NVML_GPM_METRIC_SM_OCCUPANCY;
      check(api_.gpm_metrics(&req), index, "nvmlGpmMetricsGet");
      auto ratio = [](const nvmlGpmMetric_t& m) -> std::optional<double> {
        if (m.nvmlReturn != NVML_SUCCESS) return std::nullopt;
        return std::clamp(m.value / 100.0, 0.0, 1.0);
      };
      s.smact = ratio(req.metrics[0]);
      s.smocc = ratio(req.metrics[1]);
    }
    std::swap(st.prev, st.cur);
    st.have_prev = true;
  }

  NvmlOptions opts_;
  void* lib_ = nullptr;
  NvmlApi api_;
  std::string driver_;
  // mutable: capabilities (const) adds a GPU to DCGM's watch the first time it is asked about.
  mutable std::unique_ptr<DcgmSampler> dcgm_;
  std::string dcgm_error_;
  std::mutex mu_;
  std::map<int, GpmState> gpm_;
  std::map<int, std::string> uuids_;  // for error messages
};

}  // namespace

std::unique_ptr<GpuBackend> open_nvml_backend(const NvmlOptions& opts) {
  return std::make_unique<NvmlBackend>(opts);
}

}  // namespace colo::gpu
