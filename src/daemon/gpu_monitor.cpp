#include "daemon/gpu_monitor.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "core/error.h"

namespace colo::daemon {

namespace {

constexpr const char* kPlaceholderPrefix = "GPU-unknown-";

std::string label(const GpuSlot& s) { return fmt::format("GPU {} ({})", s.nvml_index, s.uuid); }

std::string seconds(Seconds s) { return fmt::format("{:.0f} s", std::max(0.0, std::ceil(s))); }

}  // namespace

std::string placeholder_uuid(int nvml_index) { return kPlaceholderPrefix + std::to_string(nvml_index); }
bool is_placeholder_uuid(const std::string& uuid) { return uuid.empty() || uuid.rfind(kPlaceholderPrefix, 0) == 0; }

GpuMonitor::GpuMonitor(std::unique_ptr<gpu::GpuBackend> backend, const std::vector<std::string>& managed,
                       Seconds window, HealthPolicy health)
    : backend_(std::move(backend)), policy_(health) {
  policy_.fail_after = std::max(1, policy_.fail_after);
  policy_.recover_after = std::max(1, policy_.recover_after);
  policy_.probe_initial = std::max(0.0, policy_.probe_initial);
  policy_.probe_max = std::max(policy_.probe_initial, policy_.probe_max);
  const std::vector<gpu::DeviceInfo> devices = backend_->discover();
  std::set<std::string> wanted(managed.begin(), managed.end());
  std::set<std::string> matched;
  for (const gpu::DeviceInfo& d : devices) {
    const std::string idx = std::to_string(d.index);
    if (!wanted.empty() && !wanted.count(idx) && !(!d.uuid.empty() && wanted.count(d.uuid))) continue;
    // Named by index, by UUID, or both (the same GPU twice is still one GPU).
    if (wanted.count(idx)) matched.insert(idx);
    if (!d.uuid.empty() && wanted.count(d.uuid)) matched.insert(d.uuid);
    DeviceHealth& h = health_[d.index];
    // Never an empty identity: the UUID if that call answered, else a placeholder.
    const std::string uuid = d.uuid.empty() ? placeholder_uuid(d.index) : d.uuid;
    if (d.error.empty()) {
      capability_lines_.push_back(fmt::format("GPU {} ({}, {}): SMACT via {}{}", d.index, d.name, uuid,
                                              gpu::to_string(d.caps.smact_path),
                                              d.caps.smact_reason.empty() ? "" : " — " + d.caps.smact_reason));
    } else {
      h.healthy = false;
      h.needs_discovery = true;
      h.error = d.error;
      h.backoff = policy_.probe_initial;
      capability_lines_.push_back(fmt::format(
          "GPU {} failed during discovery, marked unhealthy: {} (known as {}; re-probed with back-off)", d.index,
          d.error, uuid));
    }
    auto add = [&](int mig, const std::string& slot_uuid, const std::string& name, MiB total) {
      GpuSlot s(window);
      s.slot = static_cast<int>(slots_.size());
      s.nvml_index = d.index;
      s.mig_index = mig;
      s.uuid = slot_uuid;
      s.name = name;
      s.total_mib = total;
      s.smact_path = d.caps.smact_path;
      slots_.push_back(std::move(s));
    };
    if (d.mig_enabled) {
      if (d.mig_instances.empty())
        capability_lines_.push_back(fmt::format("GPU {} has MIG enabled but no instances: nothing can run on it", d.index));
      for (const gpu::MigInstanceInfo& m : d.mig_instances) add(m.index, m.uuid, m.name, m.total_mib);
    } else {
      add(-1, uuid, d.name, d.total_mib);
    }
    publish(d.index, h);
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

std::vector<GpuSlot*> GpuMonitor::slots_of(int nvml_index) {
  std::vector<GpuSlot*> out;
  for (GpuSlot& s : slots_)
    if (s.nvml_index == nvml_index) out.push_back(&s);
  return out;
}

std::vector<MonitorEvent> GpuMonitor::sample(Seconds now) {
  std::vector<MonitorEvent> events;
  for (auto& [index, h] : health_) {
    const std::vector<GpuSlot*> slots = slots_of(index);
    if (slots.empty() || h.needs_restart) continue;
    if (!h.healthy && h.good_samples == 0) {  // unhealthy, not on probation: probe when due
      if (!h.next_probe) {
        // Failed during discovery: reported once, probed from now on.
        h.backoff = policy_.probe_initial;
        h.next_probe = now + h.backoff;
        events.push_back({MonitorEvent::Kind::Unhealthy, index, {}, 
                          fmt::format("{} failed during discovery and is unhealthy: {}; next probe in {}",
                                      label(*slots[0]), h.error, seconds(h.backoff)),
                          {}});
        for (GpuSlot* s : slots) events.back().slots.push_back(s->slot);
        publish(index, h);
        continue;
      }
      // A clock stepped backwards must not postpone the probe beyond the back-off.
      if (*h.next_probe - now > h.backoff) h.next_probe = now + h.backoff;
      if (now < *h.next_probe) {
        publish(index, h);
        continue;
      }
    }
    if (std::optional<std::string> err = read_device(index, h, now, events))
      on_failure(index, h, *err, now, events);
    else
      on_success(index, h, now, events);
    publish(index, h);
  }
  return events;
}

std::optional<std::string> GpuMonitor::read_device(int index, DeviceHealth& h, Seconds now,
                                                   std::vector<MonitorEvent>& events) {
  std::vector<GpuSlot*> slots = slots_of(index);
  try {
    if (h.needs_discovery) {
      const gpu::DeviceInfo d = backend_->discover_device(index);
      if (!d.error.empty()) return d.error;
      GpuSlot& s = *slots[0];
      if (d.mig_enabled || slots.size() != 1) {
        h.needs_restart = true;
        h.error = fmt::format("GPU {} came back with MIG enabled: restart colod to schedule its MIG instances", index);
        h.next_probe.reset();
        events.push_back({MonitorEvent::Kind::ProbeFailed, index, {s.slot}, h.error, {}});
        return std::nullopt;  // not a failure of the device; it just stays out
      }
      h.needs_discovery = false;
      const std::string old = s.uuid;
      s.uuid = d.uuid.empty() ? old : d.uuid;
      s.name = d.name;
      if (d.total_mib > 0) s.total_mib = d.total_mib;
      s.smact_path = d.caps.smact_path;
      capability_lines_.push_back(fmt::format("GPU {} ({}, {}): SMACT via {}{}", d.index, d.name, s.uuid,
                                              gpu::to_string(d.caps.smact_path),
                                              d.caps.smact_reason.empty() ? "" : " — " + d.caps.smact_reason));
      if (s.uuid != old)
        events.push_back({MonitorEvent::Kind::IdentityLearned, index, {s.slot},
                          fmt::format("GPU {} answers again: {} is {} ({}, {} MiB)", index, old, s.uuid, s.name,
                                      s.total_mib),
                          old});
    }
    const gpu::DeviceSample d = backend_->sample(index);
    for (GpuSlot* s : slots) {
      const gpu::MemorySample* m = &d.memory;
      if (s->mig_index >= 0) {
        m = nullptr;
        // By UUID: NVML reuses instance indices after a repartition ("handles may be reused and
        // their properties can change"), and the slot's UUID is what its jobs were given.
        for (const gpu::MigSample& ms : d.mig)
          if (ms.uuid.empty() ? ms.index == s->mig_index : ms.uuid == s->uuid) m = &ms.memory;
        if (!m)
          throw gpu::GpuError(fmt::format("GPU {}", index), "MIG instance",
                              fmt::format("{} is gone (MIG repartitioned? colod rediscovers instances when restarted)", s->uuid));
      }
      s->used_mib = m->used_mib;
      if (m->total_mib > 0) s->total_mib = m->total_mib;
      s->process_mib = m->process_mib;
      s->power_w = d.power_w;
      s->last_smact = d.smact;
      s->last_smocc = d.smocc;
      s->gpu_util = d.gpu_util;
      s->energy_mj = d.energy_mj;
      // The caller's clock is the wall clock: if it stepped back, the window's samples are from
      // "the future"; start the window over rather than fail (WindowSampler refuses that).
      if (s->window_t && now < *s->window_t) s->window = gpu::WindowSampler(s->window.window());
      s->window.add(now, d.smact, d.gpu_util, m->process_mib);
      s->window_t = now;
    }
    track_metrics(index, h, d.metric_errors, now, events);
    return std::nullopt;
  } catch (const gpu::GpuError& e) {
    return std::string(e.what());
  }
}

void GpuMonitor::on_failure(int index, DeviceHealth& h, const std::string& what, Seconds now,
                            std::vector<MonitorEvent>& events) {
  const std::vector<GpuSlot*> slots = slots_of(index);
  ++h.consecutive_failures;
  h.error = what;
  h.good_samples = 0;
  h.metric_errors.clear();
  for (GpuSlot* s : slots) {  // nothing measured this round
    s->power_w.reset();
    s->last_smact.reset();
    s->last_smocc.reset();
    s->gpu_util.reset();
    s->energy_mj.reset();
  }
  MonitorEvent ev;
  ev.nvml_index = index;
  for (GpuSlot* s : slots) ev.slots.push_back(s->slot);
  if (h.healthy) {
    if (h.consecutive_failures < policy_.fail_after) return;  // maybe transient: keep the last values
    h.healthy = false;
    h.backoff = policy_.probe_initial;
    h.next_probe = now + h.backoff;
    ev.kind = MonitorEvent::Kind::Unhealthy;
    ev.message = fmt::format("{} is unhealthy after {} failed samples in a row: {}; next probe in {}",
                             label(*slots[0]), h.consecutive_failures, what, seconds(h.backoff));
  } else {
    h.backoff = std::min(policy_.probe_max, std::max(policy_.probe_initial, h.backoff * 2));
    h.next_probe = now + h.backoff;
    ev.kind = MonitorEvent::Kind::ProbeFailed;
    ev.message = fmt::format("{} still fails ({} in a row): {}; next probe in {}", label(*slots[0]),
                             h.consecutive_failures, what, seconds(h.backoff));
  }
  events.push_back(std::move(ev));
}

void GpuMonitor::on_success(int index, DeviceHealth& h, Seconds now, std::vector<MonitorEvent>& events) {
  (void)now;
  if (h.needs_restart) return;
  h.consecutive_failures = 0;
  if (h.healthy) return;
  h.next_probe.reset();
  if (++h.good_samples < policy_.recover_after) return;
  h.healthy = true;
  h.good_samples = 0;
  h.backoff = 0;
  MonitorEvent ev;
  ev.kind = MonitorEvent::Kind::Healthy;
  ev.nvml_index = index;
  const std::vector<GpuSlot*> slots = slots_of(index);
  for (GpuSlot* s : slots) ev.slots.push_back(s->slot);
  ev.message = fmt::format("{} is healthy again after {} good samples in a row (last error: {})", label(*slots[0]),
                           policy_.recover_after, h.error);
  events.push_back(std::move(ev));
}

void GpuMonitor::track_metrics(int index, DeviceHealth& h, const std::map<std::string, std::string>& errors,
                               Seconds now, std::vector<MonitorEvent>& events) {
  h.metric_errors = errors;
  for (auto& [field, st] : h.metrics)
    if (!errors.count(field)) st.failing = false;
  for (const auto& [field, what] : errors) {
    MetricState& st = h.metrics[field];
    ++st.count;
    ++st.since_reported;
    st.failing = true;
    // Reported the first time, then at most every metric_log_every seconds (with a count).
    if (st.reported_at && now - *st.reported_at < policy_.metric_log_every && now >= *st.reported_at) continue;
    MonitorEvent ev;
    ev.kind = MonitorEvent::Kind::MetricError;
    ev.nvml_index = index;
    for (GpuSlot* s : slots_of(index)) ev.slots.push_back(s->slot);
    ev.message = fmt::format("GPU {}: {} unknown ({} failed sample(s){}): {}; the GPU stays in service", index,
                             field, st.since_reported, st.reported_at ? " since the last report" : "", what);
    events.push_back(std::move(ev));
    st.reported_at = now;
    st.since_reported = 0;
  }
}

void GpuMonitor::publish(int index, const DeviceHealth& h) {
  std::string reason;
  if (h.needs_restart) {
    reason = h.error;
  } else if (!h.healthy && h.good_samples > 0) {
    reason = fmt::format("recovering: {} of {} good samples (after: {})", h.good_samples, policy_.recover_after, h.error);
  } else if (!h.healthy) {
    reason = h.needs_discovery ? fmt::format("failed during discovery: {}", h.error)
                               : fmt::format("{} failed samples in a row: {}", h.consecutive_failures, h.error);
  } else if (h.consecutive_failures > 0) {
    reason = fmt::format("{} failed sample(s) in a row, unhealthy at {}: {}", h.consecutive_failures,
                         policy_.fail_after, h.error);
  }
  for (GpuSlot* s : slots_of(index)) {
    s->healthy = h.healthy;
    s->error = h.healthy ? std::string() : h.error;
    s->health_reason = reason;
    s->consecutive_failures = h.consecutive_failures;
    s->good_samples = h.good_samples;
    s->next_probe = h.healthy ? std::nullopt : h.next_probe;
    s->metric_errors = h.metric_errors;
    s->metric_error_counts.clear();
    for (const auto& [field, st] : h.metrics) s->metric_error_counts[field] = st.count;
  }
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
