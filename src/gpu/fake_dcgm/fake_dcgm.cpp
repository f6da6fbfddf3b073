// The fake libdcgm: the DCGM calls colo makes (gpu/dcgm_api.h), answered from the fake NVML's
// state directory so that DCGM's SM activity is what the fake jobs declared — the same
// accounting the fake NVML's GPM uses. Only GPUs whose spec carries ':dcgm' have profiling
// fields (others: DCGM_ST_NOT_SUPPORTED, as on a GPU or driver without them).
//   COLO_FAKE_NVML_DIR, COLO_FAKE_NVML_GPUS (or DIR/gpus.spec): as for the fake NVML.
//   COLO_FAKE_DCGM_HOSTENGINE: the address dcgmConnect accepts (unset: no nv-hostengine runs).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "gpu/dcgm_api.h"
#include "gpu/fake_nvml/fake_spec.h"
#include "gpu/fake_nvml/fake_state.h"

#define FAKE_DCGM_EXPORT extern "C" __attribute__((visibility("default")))

namespace dcgm = colo::gpu::dcgm;
namespace fake = colo::gpu::fake;

namespace {

constexpr dcgm::Return kBadParam = -1;          // DCGM_ST_BADPARAM
constexpr dcgm::Return kUninitialized = -2;     // DCGM_ST_UNINITIALIZED
constexpr dcgm::Return kConnectionNotValid = -12;  // DCGM_ST_CONNECTION_NOT_VALID

struct State {
  std::mutex mu;
  bool initialised = false;
  std::vector<colo::gpu::FakeGpuSpec> gpus;
  std::unique_ptr<fake::StateDir> dir;
  dcgm::Handle next_handle = 1;
  std::set<dcgm::Handle> handles;
  std::set<unsigned int> group;  // one group is all colo makes
  bool fields_watched = false;
};

State& state() {
  static State s;
  return s;
}

// SM activity / occupancy of GPU `gpu` (and its MIG instances): the sum of what the live fake
// jobs declared there, capped at 1.
std::pair<double, double> activity(const State& s, unsigned int gpu) {
  std::vector<std::string> uuids{colo::gpu::fake_gpu_uuid(static_cast<int>(gpu))};
  for (std::size_t j = 0; j < s.gpus[gpu].mig.size(); ++j)
    uuids.push_back(colo::gpu::fake_mig_uuid(static_cast<int>(gpu), static_cast<int>(j)));
  double act = 0, occ = 0;
  for (const fake::ProcessRecord& r : s.dir->live_processes())
    for (const fake::Allocation& a : r.allocations)
      if (std::find(uuids.begin(), uuids.end(), a.uuid) != uuids.end()) {
        act += a.sm_activity;
        occ += a.sm_occupancy;
      }
  return {std::min(1.0, act), std::min(1.0, occ)};
}

}  // namespace

FAKE_DCGM_EXPORT dcgm::Return dcgmInit(void) {
  State& s = state();
  std::lock_guard lock(s.mu);
  const char* dir = std::getenv("COLO_FAKE_NVML_DIR");
  if (!dir || !*dir) return kUninitialized;
  try {
    auto sd = std::make_unique<fake::StateDir>(dir);
    const char* env_spec = std::getenv("COLO_FAKE_NVML_GPUS");
    const std::string spec = env_spec && *env_spec ? env_spec : sd->stored_spec();
    s.gpus = colo::gpu::parse_fake_gpu_spec(spec);
    s.dir = std::move(sd);
  } catch (const std::exception&) {
    return kUninitialized;
  }
  s.initialised = true;
  return dcgm::kOk;
}

FAKE_DCGM_EXPORT dcgm::Return dcgmShutdown(void) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.initialised = false;
  s.handles.clear();
  s.group.clear();
  s.fields_watched = false;
  return dcgm::kOk;
}

FAKE_DCGM_EXPORT dcgm::Return dcgmStartEmbedded(int op_mode, dcgm::Handle* handle) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.initialised) return kUninitialized;
  if (!handle || op_mode < 1 || op_mode > 2) return kBadParam;
  *handle = s.next_handle++;
  s.handles.insert(*handle);
  return dcgm::kOk;
}

FAKE_DCGM_EXPORT dcgm::Return dcgmStopEmbedded(dcgm::Handle handle) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.handles.erase(handle) ? dcgm::kOk : kBadParam;
}

FAKE_DCGM_EXPORT dcgm::Return dcgmConnect(const char* address, dcgm::Handle* handle) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.initialised) return kUninitialized;
  if (!address || !handle) return kBadParam;
  const char* engine = std::getenv("COLO_FAKE_DCGM_HOSTENGINE");
  if (!engine || std::strcmp(engine, address) != 0) return kConnectionNotValid;
  *handle = s.next_handle++;
  s.handles.insert(*handle);
  return dcgm::kOk;
}

FAKE_DCGM_EXPORT dcgm::Return dcgmDisconnect(dcgm::Handle handle) { return dcgmStopEmbedded(handle); }

FAKE_DCGM_EXPORT dcgm::Return dcgmGroupCreate(dcgm::Handle handle, int type, const char* name, dcgm::GpuGroup* group) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.handles.count(handle)) return kConnectionNotValid;
  if (!name || !group || type != dcgm::kGroupEmpty) return kBadParam;
  *group = 1;
  return dcgm::kOk;
}

FAKE_DCGM_EXPORT dcgm::Return dcgmGroupAddDevice(dcgm::Handle handle, dcgm::GpuGroup group, unsigned int gpu) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.handles.count(handle)) return kConnectionNotValid;
  if (group != 1 || gpu >= s.gpus.size()) return kBadParam;
  if (!s.gpus[gpu].dcgm) return dcgm::kNotSupported;
  s.group.insert(gpu);
  return dcgm::kOk;
}

FAKE_DCGM_EXPORT dcgm::Return dcgmFieldGroupCreate(dcgm::Handle handle, int count, const unsigned short* fields,
                                                   const char* name, dcgm::FieldGroup* out) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.handles.count(handle)) return kConnectionNotValid;
  if (count <= 0 || !fields || !name || !out) return kBadParam;
  *out = 1;
  return dcgm::kOk;
}

FAKE_DCGM_EXPORT dcgm::Return dcgmWatchFields(dcgm::Handle handle, dcgm::GpuGroup group, dcgm::FieldGroup fields,
                                              long long update_usec, double, int) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.handles.count(handle)) return kConnectionNotValid;
  if (group != 1 || fields != 1 || update_usec <= 0) return kBadParam;
  s.fields_watched = true;
  return dcgm::kOk;
}

FAKE_DCGM_EXPORT dcgm::Return dcgmUpdateAllFields(dcgm::Handle handle, int) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.handles.count(handle) ? dcgm::kOk : kConnectionNotValid;
}

FAKE_DCGM_EXPORT dcgm::Return dcgmGetLatestValuesForFields(dcgm::Handle handle, int gpu, unsigned short fields[],
                                                           unsigned int count, dcgm::FieldValueV1 values[]) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.handles.count(handle)) return kConnectionNotValid;
  if (gpu < 0 || static_cast<std::size_t>(gpu) >= s.gpus.size() || !fields || !values) return kBadParam;
  const bool watched = s.fields_watched && s.group.count(static_cast<unsigned int>(gpu));
  const auto [act, occ] = watched ? activity(s, static_cast<unsigned int>(gpu)) : std::pair<double, double>{0, 0};
  const auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  for (unsigned int i = 0; i < count; ++i) {
    if (values[i].version != dcgm::kFieldValueVersion1) return -8;  // DCGM_ST_VER_MISMATCH
    values[i].fieldId = fields[i];
    values[i].fieldType = dcgm::kTypeDouble;
    values[i].ts = now_us;
    if (!watched) {
      values[i].status = dcgm::kNoData;
      values[i].value.dbl = dcgm::kFp64Blank;
    } else if (fields[i] == dcgm::kFieldSmActive || fields[i] == dcgm::kFieldSmOccupancy) {
      values[i].status = dcgm::kOk;
      values[i].value.dbl = fields[i] == dcgm::kFieldSmActive ? act : occ;
    } else {
      values[i].status = dcgm::kNotSupported;
      values[i].value.dbl = dcgm::kFp64Blank;
    }
  }
  return dcgm::kOk;
}

FAKE_DCGM_EXPORT const char* dcgmErrorString(dcgm::Return r) {
  switch (r) {
    case dcgm::kOk: return "Success";
    case kBadParam: return "Bad parameter passed to function";
    case kUninitialized: return "Object is in undefined state";
    case dcgm::kNotSupported: return "This request is not supported";
    case kConnectionNotValid: return "The connection to the host engine is not valid any longer";
    case dcgm::kNoData: return "No data is available";
    default: return "Unknown error";
  }
}
