// The fake NVML: a shared library exporting the NVML functions colo uses (nvml_api.h) over
// simulated GPUs. Configuration comes from the environment, as the real library gets its
// devices from the driver:
//   COLO_FAKE_NVML_GPUS  spec, e.g. "2x40GiB" (fallback: COLO_FAKE_NVML_DIR/gpus.spec)
//   COLO_FAKE_NVML_DIR   shared state directory (fake_state.h)
// Memory and processes come from the records fake jobs (colo-fake-job) write; SM activity,
// utilisation and power derive from the activity the jobs declared. See docs/GPU-BACKEND.md.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpu/fake_nvml/fake_spec.h"
#include "gpu/fake_nvml/fake_state.h"
#include "gpu/nvml_api.h"

#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))

// A handle: a physical GPU (mig == -1) or one of its MIG instances.
struct nvmlDevice_st {
  int gpu = 0;
  int mig = -1;
};

// A GPM sample: when it was taken and the device's instantaneous SM activity then.
struct nvmlGpmSample_st {
  const nvmlDevice_st* device = nullptr;
  double t = 0;
  double smact = 0;
  double smocc = 0;
};

namespace {

using colo::MiB;
using colo::gpu::FakeGpuSpec;
namespace fake = colo::gpu::fake;

constexpr double kIdleWatts = 60.0;
constexpr double kMaxWatts = 400.0;
constexpr unsigned long long kMiB = 1024ULL * 1024ULL;

struct Usage {
  MiB used = 0;
  double smact = 0;
  double smocc = 0;
  std::vector<std::pair<int, MiB>> processes;  // pid, MiB
};

struct State {
  std::mutex mu;
  int init_count = 0;
  std::vector<FakeGpuSpec> gpus;
  std::unique_ptr<fake::StateDir> dir;
  // Stable handles: index i -> parents[i]; MIG instance j of GPU i -> migs[i][j].
  std::vector<std::unique_ptr<nvmlDevice_st>> parents;
  std::vector<std::vector<std::unique_ptr<nvmlDevice_st>>> migs;
};

State& state() {
  static State s;
  return s;
}

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

bool valid(const State& s, nvmlDevice_t d) {
  if (!d) return false;
  for (std::size_t i = 0; i < s.parents.size(); ++i) {
    if (s.parents[i].get() == d) return true;
    for (auto& m : s.migs[i]) {
      if (m.get() == d) return true;
    }
  }
  return false;
}

std::string uuid_of(const State& s, const nvmlDevice_st& d) {
  (void)s;
  return d.mig < 0 ? colo::gpu::fake_gpu_uuid(d.gpu) : colo::gpu::fake_mig_uuid(d.gpu, d.mig);
}

MiB total_of(const State& s, const nvmlDevice_st& d) {
  const FakeGpuSpec& g = s.gpus[static_cast<std::size_t>(d.gpu)];
  return d.mig < 0 ? g.total_mib : g.mig[static_cast<std::size_t>(d.mig)].total_mib;
}

// What the live jobs hold on `d` (for a MIG-enabled parent: on all its instances).
Usage usage_of(const State& s, const nvmlDevice_st& d) {
  std::vector<std::string> uuids;
  const FakeGpuSpec& g = s.gpus[static_cast<std::size_t>(d.gpu)];
  if (d.mig < 0 && !g.mig.empty()) {
    for (std::size_t j = 0; j < g.mig.size(); ++j) {
      uuids.push_back(colo::gpu::fake_mig_uuid(d.gpu, static_cast<int>(j)));
    }
  } else {
    uuids.push_back(uuid_of(s, d));
  }
  Usage u;
  for (const fake::ProcessRecord& r : s.dir->live_processes()) {
    MiB mine = 0;
    bool present = false;
    for (const fake::Allocation& a : r.allocations) {
      if (std::find(uuids.begin(), uuids.end(), a.uuid) == uuids.end()) continue;
      present = true;
      mine += a.mib;
      u.smact += a.sm_activity;
      u.smocc += a.sm_occupancy;
    }
    if (present) {
      u.used += mine;
      u.processes.emplace_back(r.pid, mine);
    }
  }
  u.smact = std::min(1.0, u.smact);
  u.smocc = std::min(1.0, u.smocc);
  std::sort(u.processes.begin(), u.processes.end());
  return u;
}

double power_w(const Usage& u) { return kIdleWatts + (kMaxWatts - kIdleWatts) * u.smact; }

// Common entry checks: initialised, valid handle, no injected failure for this GPU and call.
// Returns SUCCESS or the error to give back.
nvmlReturn_t enter(const State& s, nvmlDevice_t d, const char* call) {
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (!valid(s, d)) return NVML_ERROR_INVALID_ARGUMENT;
  if (auto code = s.dir->injected_failure(d->gpu, call)) return static_cast<nvmlReturn_t>(*code);
  return NVML_SUCCESS;
}

nvmlReturn_t copy_string(const std::string& v, char* buf, unsigned int len) {
  if (!buf) return NVML_ERROR_INVALID_ARGUMENT;
  if (v.size() + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buf, v.c_str(), v.size() + 1);
  return NVML_SUCCESS;
}

// Runs `body` with the state locked, turning any C++ exception into NVML_ERROR_UNKNOWN:
// nothing may unwind through the C ABI.
template <typename F>
nvmlReturn_t guarded(F&& body) {
  try {
    State& s = state();
    std::lock_guard lock(s.mu);
    return body(s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fake-nvml: %s\n", e.what());
    return NVML_ERROR_UNKNOWN;
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  return guarded([](State& s) {
    if (s.init_count > 0) {
      ++s.init_count;
      return NVML_SUCCESS;
    }
    const char* dir = std::getenv("COLO_FAKE_NVML_DIR");
    if (!dir || !*dir) {
      std::fprintf(stderr, "fake-nvml: COLO_FAKE_NVML_DIR is not set\n");
      return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    auto sd = std::make_unique<fake::StateDir>(dir);
    const char* env_spec = std::getenv("COLO_FAKE_NVML_GPUS");
    std::string spec = env_spec && *env_spec ? env_spec : sd->stored_spec();
    if (spec.empty()) {
      std::fprintf(stderr, "fake-nvml: COLO_FAKE_NVML_GPUS is not set and %s/gpus.spec is missing\n",
                   dir);
      return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    try {
      s.gpus = colo::gpu::parse_fake_gpu_spec(spec);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fake-nvml: %s\n", e.what());
      return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    s.dir = std::move(sd);
    s.parents.clear();
    s.migs.clear();
    for (std::size_t i = 0; i < s.gpus.size(); ++i) {
      auto p = std::make_unique<nvmlDevice_st>();
      p->gpu = static_cast<int>(i);
      s.parents.push_back(std::move(p));
      s.migs.emplace_back();
      for (std::size_t j = 0; j < s.gpus[i].mig.size(); ++j) {
        auto m = std::make_unique<nvmlDevice_st>();
        m->gpu = static_cast<int>(i);
        m->mig = static_cast<int>(j);
        s.migs.back().push_back(std::move(m));
      }
    }
    s.init_count = 1;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlShutdown(void) {
  return guarded([](State& s) {
    if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
    --s.init_count;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_UNKNOWN: return "Unknown Error";
    default: return "Unknown Error";
  }
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return guarded([&](State& s) {
    if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
    return copy_string("fake-nvml-1", version, length);
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  return guarded([&](State& s) {
    if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = static_cast<unsigned int>(s.gpus.size());
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                             nvmlDevice_t* device) {
  return guarded([&](State& s) {
    if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
    if (!device || index >= s.parents.size()) return NVML_ERROR_INVALID_ARGUMENT;
    *device = s.parents[index].get();
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* uuid, unsigned int length) {
  return guarded([&](State& s) {
    if (auto r = enter(s, d, "nvmlDeviceGetUUID")) return r;
    return copy_string(uuid_of(s, *d), uuid, length);
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* name, unsigned int length) {
  return guarded([&](State& s) {
    if (auto r = enter(s, d, "nvmlDeviceGetName")) return r;
    const FakeGpuSpec& g = s.gpus[static_cast<std::size_t>(d->gpu)];
    std::string n = d->mig < 0 ? colo::gpu::fake_gpu_name(g)
                               : colo::gpu::fake_mig_name(g, g.mig[static_cast<std::size_t>(d->mig)]);
    return copy_string(n, name, length);
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* memory) {
  return guarded([&](State& s) {
    if (auto r = enter(s, d, "nvmlDeviceGetMemoryInfo")) return r;
    if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
    const unsigned long long total = static_cast<unsigned long long>(total_of(s, *d)) * kMiB;
    const unsigned long long used = static_cast<unsigned long long>(usage_of(s, *d).used) * kMiB;
    memory->total = total;
    memory->used = std::min(used, total);  // jobs never exceed it, but stay consistent
    memory->free = total - memory->used;
    return NVML_SUCCESS;
  });
}

namespace {
nvmlReturn_t running_processes(const char* call, nvmlDevice_t d, unsigned int* count,
                               nvmlProcessInfo_t* infos) {
  return guarded([&](State& s) {
    if (auto r = enter(s, d, call)) return r;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    Usage u = usage_of(s, *d);
    const auto n = static_cast<unsigned int>(u.processes.size());
    if (*count < n) {
      *count = n;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (n > 0 && !infos) return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned int i = 0; i < n; ++i) {
      nvmlProcessInfo_t p{};
      p.pid = static_cast<unsigned int>(u.processes[i].first);
      p.usedGpuMemory = static_cast<unsigned long long>(u.processes[i].second) * kMiB;
      p.gpuInstanceId = d->mig < 0 ? 0xFFFFFFFFu : static_cast<unsigned int>(d->mig);
      p.computeInstanceId = d->mig < 0 ? 0xFFFFFFFFu : 0u;
#ifdef COLO_FAKE_NVML_535_LAYOUT
      // Drivers 535.43.02-535.86.x: _v3 entries carry usedGpuCcProtectedMemory too (32 bytes).
      if (std::strcmp(call, "nvmlDeviceGetComputeRunningProcesses_v3") == 0) {
        struct Cc {
          nvmlProcessInfo_t base;
          unsigned long long usedGpuCcProtectedMemory;
        };
        reinterpret_cast<Cc*>(infos)[i] = Cc{p, 0};
        continue;
      }
#endif
      infos[i] = p;
    }
    *count = n;
    return NVML_SUCCESS;
  });
}
}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d,
                                                                       unsigned int* count,
                                                                       nvmlProcessInfo_t* infos) {
  return running_processes("nvmlDeviceGetComputeRunningProcesses_v3", d, count, infos);
}

#ifdef COLO_FAKE_NVML_535_LAYOUT
// Present in the 535 drivers whose _v3 has the 32-byte entries (the backend's layout test).
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t, void*) {
  return NVML_ERROR_NOT_SUPPORTED;
}
#endif

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d,
                                                                       unsigned int* count,
                                                                       nvmlProcessInfo_t* infos) {
  return running_processes("nvmlDeviceGetComputeRunningProcesses_v2", d, count, infos);
}

// Accounting mode is on for fake GPUs whose state directory keeps accounting records (every
// directory configure_fake_nvml_env makes), as on a node where the admin ran nvidia-smi -am 1.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetAccountingMode(nvmlDevice_t d, nvmlEnableState_t* mode) {
  return guarded([&](State& s) {
    if (auto r = enter(s, d, "nvmlDeviceGetAccountingMode")) return r;
    if (!mode) return NVML_ERROR_INVALID_ARGUMENT;
    *mode = ::access((s.dir->path() + "/accounting").c_str(), F_OK) == 0 ? NVML_FEATURE_ENABLED
                                                                          : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetAccountingStats(nvmlDevice_t d, unsigned int pid,
                                                           nvmlAccountingStats_t* stats) {
  return guarded([&](State& s) {
    if (auto r = enter(s, d, "nvmlDeviceGetAccountingStats")) return r;
    if (!stats) return NVML_ERROR_INVALID_ARGUMENT;
    const auto peak = s.dir->accounting_peak(static_cast<int>(pid), uuid_of(s, *d));
    if (!peak) return NVML_ERROR_NOT_FOUND;
    *stats = nvmlAccountingStats_t{};
    stats->maxMemoryUsage = static_cast<unsigned long long>(*peak) * kMiB;
    stats->isRunning = fake::process_start_time(static_cast<int>(pid)) ? 1u : 0u;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d,
                                                             nvmlUtilization_t* util) {
  return guarded([&](State& s) {
    if (auto r = enter(s, d, "nvmlDeviceGetUtilizationRates")) return r;
    // As on real GPUs: no utilisation counters for MIG instances or a MIG-enabled GPU.
    if (d->mig >= 0 || !s.gpus[static_cast<std::size_t>(d->gpu)].mig.empty()) {
      return NVML_ERROR_NOT_SUPPORTED;
    }
    if (!util) return NVML_ERROR_INVALID_ARGUMENT;
    // A kernel is "running" whenever any job computes: utilisation is the declared activity,
    // which is what a saturating job shows (nvidia-smi utilisation >= SMACT on real GPUs).
    Usage u = usage_of(s, *d);
    util->gpu = static_cast<unsigned int>(std::lround(100.0 * u.smact));
    util->memory = static_cast<unsigned int>(std::lround(50.0 * u.smact));
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int* mw) {
  return guarded([&](State& s) {
    if (auto r = enter(s, d, "nvmlDeviceGetPowerUsage")) return r;
    if (d->mig >= 0) return NVML_ERROR_NOT_SUPPORTED;
    if (!mw) return NVML_ERROR_INVALID_ARGUMENT;
    *mw = static_cast<unsigned int>(std::lround(power_w(usage_of(s, *d)) * 1000.0));
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d,
                                                                   unsigned long long* mj) {
  return guarded([&](State& s) {
    if (auto r = enter(s, d, "nvmlDeviceGetTotalEnergyConsumption")) return r;
    if (d->mig >= 0) return NVML_ERROR_NOT_SUPPORTED;
    if (!mj) return NVML_ERROR_INVALID_ARGUMENT;
    // The counter lives in DIR/energy-<index> so it stays monotonic across colod restarts,
    // like the driver's (CLOCK_MONOTONIC is system-wide, so times compare across processes).
    // Usage first: reading it may take the state lock itself to drop dead records.
    const double w = power_w(usage_of(s, *d));
    fake::StateDir::Lock lock(s.dir->path());
    const std::string path = s.dir->path() + "/energy-" + std::to_string(d->gpu);
    double total_mj = 0, last_t = -1, last_w = kIdleWatts;
    if (std::FILE* f = std::fopen(path.c_str(), "r")) {
      if (std::fscanf(f, "%lf %lf %lf", &total_mj, &last_t, &last_w) != 3) {
        total_mj = 0;
        last_t = -1;
      }
      std::fclose(f);
    }
    const double t = now_s();
    // Power is piecewise constant at the value seen on the previous call.
    if (last_t >= 0 && t > last_t) total_mj += last_w * (t - last_t) * 1000.0;
    const std::string tmp = path + ".tmp";
    if (std::FILE* f = std::fopen(tmp.c_str(), "w")) {
      std::fprintf(f, "%.3f %.9f %.3f\n", total_mj, t, w);
      std::fclose(f);
      std::rename(tmp.c_str(), path.c_str());
    }
    *mj = static_cast<unsigned long long>(total_mj);
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int* current,
                                                    unsigned int* pending) {
  return guarded([&](State& s) {
    if (auto r = enter(s, d, "nvmlDeviceGetMigMode")) return r;
    if (d->mig >= 0) return NVML_ERROR_NOT_SUPPORTED;
    if (!current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
    const bool on = !s.gpus[static_cast<std::size_t>(d->gpu)].mig.empty();
    *current = *pending = on ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int* count) {
  return guarded([&](State& s) {
    if (auto r = enter(s, d, "nvmlDeviceGetMaxMigDeviceCount")) return r;
    if (d->mig >= 0) return NVML_ERROR_NOT_SUPPORTED;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = 7;  // A100/H100: up to 7 instances, whatever the current partitioning
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d,
                                                                   unsigned int index,
                                                                   nvmlDevice_t* mig) {
  return guarded([&](State& s) {
    if (auto r = enter(s, d, "nvmlDeviceGetMigDeviceHandleByIndex")) return r;
    if (d->mig >= 0) return NVML_ERROR_NOT_SUPPORTED;
    if (!mig) return NVML_ERROR_INVALID_ARGUMENT;
    auto& list = s.migs[static_cast<std::size_t>(d->gpu)];
    if (list.empty()) return NVML_ERROR_NOT_SUPPORTED;
    if (index >= list.size()) return NVML_ERROR_NOT_FOUND;
    *mig = list[index].get();
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, nvmlGpmSupport_t* support) {
  return guarded([&](State& s) {
    if (auto r = enter(s, d, "nvmlGpmQueryDeviceSupport")) return r;
    if (!support) return NVML_ERROR_INVALID_ARGUMENT;
    if (support->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    support->isSupportedDevice = s.gpus[static_cast<std::size_t>(d->gpu)].gpm ? 1u : 0u;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* sample) {
  if (!sample) return NVML_ERROR_INVALID_ARGUMENT;
  *sample = new (std::nothrow) nvmlGpmSample_st;
  return *sample ? NVML_SUCCESS : NVML_ERROR_MEMORY;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
  if (!sample) return NVML_ERROR_INVALID_ARGUMENT;
  delete sample;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, nvmlGpmSample_t sample) {
  return guarded([&](State& s) {
    if (auto r = enter(s, d, "nvmlGpmSampleGet")) return r;
    if (!sample) return NVML_ERROR_INVALID_ARGUMENT;
    if (!s.gpus[static_cast<std::size_t>(d->gpu)].gpm) return NVML_ERROR_NOT_SUPPORTED;
    Usage u = usage_of(s, *d);
    sample->device = d;
    sample->t = now_s();
    sample->smact = u.smact;
    sample->smocc = u.smocc;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* req) {
  return guarded([&](State& s) {
    if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
    if (!req || !req->sample1 || !req->sample2) return NVML_ERROR_INVALID_ARGUMENT;
    if (req->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (req->numMetrics > NVML_GPM_METRIC_MAX) return NVML_ERROR_INVALID_ARGUMENT;
    const nvmlGpmSample_st& a = *req->sample1;
    const nvmlGpmSample_st& b = *req->sample2;
    if (!a.device || a.device != b.device || b.t <= a.t) return NVML_ERROR_INVALID_ARGUMENT;
    // The rate over the interval: jobs' declared activity is piecewise constant and only seen
    // at the two ends, so take the mean of both ends.
    for (unsigned int i = 0; i < req->numMetrics; ++i) {
      nvmlGpmMetric_t& m = req->metrics[i];
      m.metricInfo = {nullptr, nullptr, nullptr};
      if (m.metricId == NVML_GPM_METRIC_SM_UTIL) {
        m.value = 100.0 * (a.smact + b.smact) / 2.0;
        m.nvmlReturn = NVML_SUCCESS;
      } else if (m.metricId == NVML_GPM_METRIC_SM_OCCUPANCY) {
        m.value = 100.0 * (a.smocc + b.smocc) / 2.0;
        m.nvmlReturn = NVML_SUCCESS;
      } else {
        m.value = 0;
        m.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      }
    }
    return NVML_SUCCESS;
  });
}
