#include "daemon/gpu_monitor.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/error.h"

namespace colo::daemon {

GpuMonitor::GpuMonitor(std::unique_ptr<gpu::GpuBackend> backend, const std::vector<std::string>& managed,
                       Seconds window)
    : backend_(std::move(backend)) {
  const std::vector<gpu::DeviceInfo> devices = backend_->discover();
  std::set<std::string> wanted(managed.begin(), managed.end());
  std::set<std::string> matched;
  for (const gpu::DeviceInfo& d : devices) {
    const std::string idx = std::to_string(d.index);
    if (!wanted.empty() && !wanted.count(idx) && !wanted.count(d.uuid)) continue;
    matched.insert(wanted.count(idx) ? idx : d.uuid);
    capability_lines_.push_back(fmt::format("GPU {} ({}, {}): SMACT via {}{}", d.index, d.name, d.uuid,
                                            gpu::to_string(d.caps.smact_path),
                                            d.caps.smact_reason.empty() ? "" : " — " + d.caps.smact_reason));
    auto add = [&](int mig, const std::string& uuid, const std::string& name, MiB total) {
      GpuSlot s(window);
      s.slot = static_cast<int>(slots_.size());
      s.nvml_index = d.index;
      s.mig_index = mig;
      s.uuid = uuid;
      s.name = name;
      s.total_mib = total;
      s.smact_path = d.caps.smact_path;
      if (!d.error.empty()) {  // failed during discovery: never schedule onto it
        s.healthy = false;
        s.error = d.error;
        failed_at_discovery_.push_back(s.slot);
      }
      slots_.push_back(std::move(s));
    };
    if (!d.error.empty())
      capability_lines_.push_back(fmt::format("GPU {} failed during discovery, marked unhealthy: {}", d.index, d.error));
    if (d.mig_enabled) {
      if (d.mig_instances.empty())
        capability_lines_.push_back(fmt::format("GPU {} has MIG enabled but no instances: nothing can run on it", d.index));
      for (const gpu::MigInstanceInfo& m : d.mig_instances) add(m.index, m.uuid, m.name, m.total_mib);
    } else {
      add(-1, d.uuid, d.name, d.total_mib);
    }
  }
  for (const std::string& w : wanted)
    if (!matched.count(w)) throw UserError(fmt::format("managed GPU '{}' does not exist on this server", w));
  if (slots_.empty()) throw UserError("no GPU to manage (the backend found none, or none is in gpus.managed)");
}

bool GpuMonitor::smact_available() const {
  return std::any_of(slots_.begin(), slots_.end(),
                     [](const GpuSlot& s) { return s.smact_path != gpu::SmactPath::Unavailable; });
}

GpuSlot* GpuMonitor::find(const std::string& key) {
  for (GpuSlot& s : slots_)
    if (std::to_string(s.slot) == key || s.uuid == key) return &s;
  return nullptr;
}

std::vector<int> GpuMonitor::sample(Seconds now) {
  std::vector<int> newly_unhealthy;
  newly_unhealthy.swap(failed_at_discovery_);
  std::map<int, std::vector<GpuSlot*>> by_device;
  for (GpuSlot& s : slots_) by_device[s.nvml_index].push_back(&s);
  for (auto& [index, slots] : by_device) {
    if (std::none_of(slots.begin(), slots.end(), [](GpuSlot* s) { return s->healthy; })) continue;
    try {
      const gpu::DeviceSample d = backend_->sample(index);
      for (GpuSlot* s : slots) {
        const gpu::MemorySample* m = &d.memory;
        if (s->mig_index >= 0) {
          m = nullptr;
          for (const gpu::MigSample& ms : d.mig)
            if (ms.index == s->mig_index) m = &ms.memory;
          if (!m) throw gpu::GpuError(fmt::format("GPU {}", index), "MIG instance", "vanished");
        }
        s->used_mib = m->used_mib;
        if (m->total_mib > 0) s->total_mib = m->total_mib;
        s->process_mib = m->process_mib;
        s->power_w = d.power_w;
        s->last_smact = d.smact;
        s->window.add(now, d.smact, d.gpu_util, m->process_mib);
      }
    } catch (const gpu::GpuError& e) {
      for (GpuSlot* s : slots) {
        if (!s->healthy) continue;
        s->healthy = false;
        s->error = e.what();
        newly_unhealthy.push_back(s->slot);
      }
    }
  }
  return newly_unhealthy;
}

GpuSnapshot GpuMonitor::snapshot(const GpuSlot& s) const {
  GpuSnapshot g;
  g.index = s.slot;
  g.uuid = s.uuid;
  g.total_mib = s.total_mib;
  g.used_mib = s.used_mib;
  g.smact = s.window.smact_average();
  g.mode = s.mig_index >= 0 ? SharingMode::MigInstance : SharingMode::Plain;
  g.healthy = s.healthy;
  return g;
}

}  // namespace colo::daemon
