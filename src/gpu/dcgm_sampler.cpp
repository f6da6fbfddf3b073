#include "gpu/dcgm_sampler.h"

#include <dlfcn.h>

#include <algorithm>
#include <vector>

#include "gpu/backend.h"

namespace colo::gpu {

struct DcgmSampler::Api {
  dcgm::InitFn init = nullptr;
  dcgm::ShutdownFn shutdown = nullptr;
  dcgm::StartEmbeddedFn start_embedded = nullptr;
  dcgm::StopEmbeddedFn stop_embedded = nullptr;
  dcgm::ConnectFn connect = nullptr;
  dcgm::DisconnectFn disconnect = nullptr;
  dcgm::GroupCreateFn group_create = nullptr;
  dcgm::GroupAddDeviceFn group_add = nullptr;
  dcgm::FieldGroupCreateFn field_group_create = nullptr;
  dcgm::WatchFieldsFn watch_fields = nullptr;
  dcgm::UpdateAllFieldsFn update_all = nullptr;
  dcgm::GetLatestValuesForFieldsFn latest = nullptr;
  dcgm::ErrorStringFn error_string = nullptr;
};

namespace {

template <class F>
void resolve(void* lib, const char* name, F& fn, const std::string& library) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) throw GpuError("library", "dlsym", library + " has no " + name + " (DCGM 3 or newer is needed)");
}

}  // namespace

DcgmSampler::DcgmSampler(const DcgmOptions& opts) : opts_(opts), api_(std::make_unique<Api>()) {
  if (opts_.mode == "off") throw GpuError("library", "dcgm", "DCGM is turned off ([gpus] dcgm = \"off\")");
  std::string tried;
  for (const std::string& name : {opts_.library, std::string("libdcgm.so.3")}) {
    if (name.empty()) continue;
    lib_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib_) {
      opts_.library = name;
      break;
    }
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + name + ": " + (why ? why : "not found");
  }
  if (!lib_) throw GpuError("library", "dlopen", "DCGM is not installed (" + tried + ")");
  try {
    resolve(lib_, "dcgmInit", api_->init, opts_.library);
    resolve(lib_, "dcgmShutdown", api_->shutdown, opts_.library);
    resolve(lib_, "dcgmStartEmbedded", api_->start_embedded, opts_.library);
    resolve(lib_, "dcgmStopEmbedded", api_->stop_embedded, opts_.library);
    resolve(lib_, "dcgmConnect", api_->connect, opts_.library);
    resolve(lib_, "dcgmDisconnect", api_->disconnect, opts_.library);
    resolve(lib_, "dcgmGroupCreate", api_->group_create, opts_.library);
    resolve(lib_, "dcgmGroupAddDevice", api_->group_add, opts_.library);
    resolve(lib_, "dcgmFieldGroupCreate", api_->field_group_create, opts_.library);
    resolve(lib_, "dcgmWatchFields", api_->watch_fields, opts_.library);
    resolve(lib_, "dcgmUpdateAllFields", api_->update_all, opts_.library);
    resolve(lib_, "dcgmGetLatestValuesForFields", api_->latest, opts_.library);
    resolve(lib_, "dcgmErrorString", api_->error_string, opts_.library);
    if (dcgm::Return r = api_->init(); r != dcgm::kOk) throw GpuError("library", "dcgmInit", error(r));
    initialised_ = true;
    if (opts_.mode == "embedded") {
      if (dcgm::Return r = api_->start_embedded(dcgm::kOperationModeAuto, &handle_); r != dcgm::kOk)
        throw GpuError("library", "dcgmStartEmbedded", error(r));
      embedded_ = true;
      describe_ = "DCGM (" + opts_.library + ", embedded host engine)";
    } else {
      if (dcgm::Return r = api_->connect(opts_.mode.c_str(), &handle_); r != dcgm::kOk)
        throw GpuError("library", "dcgmConnect", "nv-hostengine at " + opts_.mode + ": " + error(r));
      describe_ = "DCGM (" + opts_.library + ", nv-hostengine at " + opts_.mode + ")";
    }
    unsigned short ids[] = {dcgm::kFieldSmActive, dcgm::kFieldSmOccupancy};
    if (dcgm::Return r = api_->field_group_create(handle_, 2, ids, "colo_smact", &fields_); r != dcgm::kOk)
      throw GpuError("library", "dcgmFieldGroupCreate", error(r));
    if (dcgm::Return r = api_->group_create(handle_, dcgm::kGroupEmpty, "colo_gpus", &group_); r != dcgm::kOk)
      throw GpuError("library", "dcgmGroupCreate", error(r));
    have_group_ = true;
  } catch (...) {
    close();
    throw;
  }
}

DcgmSampler::~DcgmSampler() { close(); }

void DcgmSampler::close() {
  if (handle_) {
    if (embedded_) api_->stop_embedded(handle_);
    else if (api_->disconnect) api_->disconnect(handle_);
    handle_ = 0;
  }
  if (initialised_ && api_->shutdown) api_->shutdown();
  initialised_ = false;
  if (lib_) dlclose(lib_);
  lib_ = nullptr;
}

std::string DcgmSampler::error(dcgm::Return r) const {
  const char* s = api_->error_string ? api_->error_string(r) : nullptr;
  return std::string(s ? s : "unknown error") + " (DCGM error " + std::to_string(r) + ")";
}

bool DcgmSampler::watch(int gpu, std::string& why) {
  if (watched_.count(gpu)) return true;
  if (dcgm::Return r = api_->group_add(handle_, group_, static_cast<unsigned int>(gpu)); r != dcgm::kOk) {
    why = "dcgmGroupAddDevice: " + error(r);
    return false;
  }
  // Re-watching the whole group after adding a GPU is how DCGM extends a watch to it.
  const auto usec = static_cast<long long>(std::max(0.1, opts_.update_interval_s) * 1e6);
  if (dcgm::Return r = api_->watch_fields(handle_, group_, fields_, usec, 0.0, 2); r != dcgm::kOk) {
    why = "dcgmWatchFields: " + error(r) +
          (r == dcgm::kNotSupported ? " (this GPU or driver has no profiling metrics)" : std::string());
    return false;
  }
  watched_.insert(gpu);
  return true;
}

DcgmReading DcgmSampler::read(int gpu) {
  DcgmReading out;
  if (!watched_.count(gpu)) return out;
  unsigned short ids[] = {dcgm::kFieldSmActive, dcgm::kFieldSmOccupancy};
  dcgm::FieldValueV1 values[2] = {};
  for (auto& v : values) v.version = dcgm::kFieldValueVersion1;
  const dcgm::Return r = api_->latest(handle_, gpu, ids, 2, values);
  if (r != dcgm::kOk) throw GpuError("GPU " + std::to_string(gpu), "dcgmGetLatestValuesForFields", error(r));
  auto ratio = [](const dcgm::FieldValueV1& v) -> std::optional<double> {
    if (v.status != dcgm::kOk || v.fieldType != dcgm::kTypeDouble || !(v.value.dbl < dcgm::kFp64Blank)) return std::nullopt;
    return std::clamp(v.value.dbl, 0.0, 1.0);
  };
  for (const auto& v : values) {
    if (v.fieldId == dcgm::kFieldSmActive) out.smact = ratio(v);
    if (v.fieldId == dcgm::kFieldSmOccupancy) out.smocc = ratio(v);
  }
  return out;
}

}  // namespace colo::gpu
