// colod's /metrics: the GPUs under dcgm-exporter's names and labels (so existing Grafana GPU
// boards read colod as they read dcgm-exporter), then colo's own colo_* families. Everything is
// read at scrape time from the monitor's latest sample, the ledger and the database, except the
// scheduler's counters, which live in memory and restart at zero with colod (as Prometheus
// counters may: rate() handles resets).
#include <algorithm>
#include <set>
#include <unistd.h>

#include <fmt/format.h>

#include "daemon/daemon.h"
#include "daemon/prometheus_text.h"

namespace colo::daemon {

namespace {

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

// The states a job can be in, so that every one is exported (a zero is information too).
constexpr const char* kJobStates[] = {"estimating", "queued", "running", "recovering", "done", "failed", "cancelled"};

}  // namespace

Histogram Daemon::new_decision_histogram() {
  return Histogram({0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1});
}

std::string Daemon::metrics_text(bool dcgm_model_label) {
  PrometheusText m;
  const std::string host = host_name();
  // dcgm-exporter's labels: gpu (NVML index), UUID, device (nvidiaN), Hostname; a MIG slot adds
  // GPU_I_ID (its MIG device index) as dcgm-exporter does. dcgm-exporter's `modelName` label is
  // camelCase, which promtool's linter rejects: by default the model is in colo_gpu_info
  // (join on gpu/UUID), and /metrics?labels=dcgm adds modelName for boards that group by it.
  auto labels = [&](const GpuSlot& s) {
    MetricLabels l{{"gpu", std::to_string(s.nvml_index)}, {"UUID", s.uuid},
                   {"device", fmt::format("nvidia{}", s.nvml_index)}, {"Hostname", host}};
    if (dcgm_model_label) l.emplace_back("modelName", s.name);
    if (s.mig_index >= 0) l.emplace_back("GPU_I_ID", std::to_string(s.mig_index));
    return l;
  };
  const auto& slots = monitor_.slots();
  // Device-wide values (utilisation, SM activity, power, energy) once per physical GPU: on a MIG
  // GPU every slot carries the parent's reading.
  std::vector<const GpuSlot*> devices;
  std::set<int> seen;
  for (const GpuSlot& s : slots)
    if (s.healthy && seen.insert(s.nvml_index).second) devices.push_back(&s);

  m.family("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).");
  for (const GpuSlot& s : slots)
    if (s.healthy) m.sample(labels(s), static_cast<double>(s.used_mib));
  m.family("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).");
  for (const GpuSlot& s : slots)
    if (s.healthy) m.sample(labels(s), static_cast<double>(std::max<MiB>(0, s.total_mib - s.used_mib)));
  m.family("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).");
  for (const GpuSlot* s : devices)
    if (s->gpu_util) m.sample(labels(*s), *s->gpu_util * 100.0);
  m.family("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned (0..1).");
  for (const GpuSlot* s : devices)
    if (s->last_smact) m.sample(labels(*s), *s->last_smact);
  m.family("DCGM_FI_PROF_SM_OCCUPANCY", "gauge", "The ratio of warps resident on an SM to the maximum (0..1).");
  for (const GpuSlot* s : devices)
    if (s->last_smocc) m.sample(labels(*s), *s->last_smocc);
  m.family("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).");
  for (const GpuSlot* s : devices)
    if (s->power_w) m.sample(labels(*s), *s->power_w);
  // dcgm-exporter declares this one a counter without the _total suffix Prometheus requires of
  // counters; colod keeps the name (so dashboards work) and declares it a gauge, which PromQL
  // treats the same (rate/increase work on it).
  m.family("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "gauge", "Total energy consumption since boot (in mJ).");
  for (const GpuSlot* s : devices)
    if (s->energy_mj) m.sample(labels(*s), static_cast<double>(*s->energy_mj));

  // ---- colo's own ----
  m.family("colo_gpu_info", "gauge", "The GPU slot's model and colod's SMACT path (always 1).");
  for (const GpuSlot& s : slots) {
    MetricLabels l = labels(s);
    l.emplace_back("model_name", s.name);
    l.emplace_back("smact_path", gpu::to_string(s.smact_path));
    m.sample(l, 1);
  }
  m.family("colo_gpu_healthy", "gauge", "1 when colod's monitor reads the GPU slot, 0 while it is out of service.");
  for (const GpuSlot& s : slots) m.sample(labels(s), s.healthy ? 1 : 0);
  m.family("colo_gpu_drained", "gauge", "1 when an operator drained the GPU slot (colo drain).");
  for (const GpuSlot& s : slots) m.sample(labels(s), drained_.count(s.uuid) ? 1 : 0);
  m.family("colo_gpu_reserved_mib", "gauge", "Memory reserved on the GPU slot by the estimates (or observed peaks) of its jobs, in MiB.");
  for (const GpuSlot& s : slots) m.sample(labels(s), static_cast<double>(ledger_.reserved_on(s.slot)));
  m.family("colo_gpu_jobs", "gauge", "Jobs running on the GPU slot (more than 1: collocated).");
  for (const GpuSlot& s : slots) {
    int n = 0;
    for (const auto& [aid, l] : live_) n += std::count(l.attempt.slots.begin(), l.attempt.slots.end(), s.slot) > 0;
    m.sample(labels(s), n);
  }
  int unhealthy = 0;
  for (const GpuSlot& s : slots) unhealthy += !s.healthy;
  m.family("colo_gpus_unhealthy", "gauge", "GPU slots the monitor has taken out of scheduling because their calls fail.");
  m.sample({}, unhealthy);

  const StoreTotals t = store_.totals();
  m.family("colo_jobs", "gauge", "Jobs by state (all jobs colod's database holds).");
  for (const char* st : kJobStates) {
    auto it = t.jobs_by_state.find(st);
    m.sample({{"state", st}}, it == t.jobs_by_state.end() ? 0.0 : static_cast<double>(it->second));
  }
  m.family("colo_queue_length", "gauge", "Jobs waiting: queued, recovering after an OOM, or estimating.");
  m.sample({}, static_cast<double>(t.waiting));
  m.family("colo_queue_oldest_wait_seconds", "gauge", "How long the longest-waiting job has waited since submission (0 when none waits).");
  m.sample({}, t.oldest_waiting_submit ? std::max(0.0, now() - *t.oldest_waiting_submit) : 0.0);
  m.family("colo_oom_crashes_total", "counter", "Job attempts that ended out of GPU memory.");
  m.sample({}, static_cast<double>(t.oom_attempts));
  m.family("colo_oom_recoveries_total", "counter", "Jobs that ran out of memory and later completed (recovered).");
  m.sample({}, static_cast<double>(t.recovered_jobs));
  m.family("colo_slot_ends_total", "counter",
           "Time slots that ended with a job stopped: it checkpointed when asked, or was preempted without.");
  m.sample({{"outcome", "checkpointed"}}, static_cast<double>(t.slot_ends_checkpointed));
  m.sample({{"outcome", "preempted"}}, static_cast<double>(t.slot_ends_preempted));

  // Per active job: the plan and what it used so far (bounded by the jobs in flight).
  const std::vector<JobRow> active = store_.jobs(std::nullopt, true);
  m.family("colo_job_estimated_mib", "gauge", "Memory a waiting or running job is planned with, in MiB, by the estimator that gave it.");
  for (const JobRow& j : active)
    if (j.need_mib)
      m.sample({{"job_id", std::to_string(j.id)}, {"estimator", j.need_source}, {"state", std::string(to_string(j.state))}},
               static_cast<double>(*j.need_mib));
  m.family("colo_job_observed_peak_mib", "gauge", "Peak GPU memory a running job has used so far (its current attempt), in MiB.");
  for (const auto& entry : live_) {
    const Live& l = entry.second;  // (not a structured binding: clang 14 cannot capture those)
    const JobId id = l.attempt.job_id;
    auto j = std::find_if(active.begin(), active.end(), [id](const JobRow& r) { return r.id == id; });
    m.sample({{"job_id", std::to_string(id)}, {"estimator", j != active.end() ? j->need_source : ""}},
             static_cast<double>(l.peak_mib));
  }

  m.family("colo_scheduler_rounds_total", "counter", "Scheduling rounds run (each considers the whole queue).");
  m.sample({}, static_cast<double>(sched_rounds_));
  m.family("colo_scheduler_placements_total", "counter", "Jobs placed on GPUs by the scheduler.");
  m.sample({}, static_cast<double>(sched_placements_));
  m.family("colo_scheduler_decision_seconds", "histogram", "Time one scheduling round spent in the scheduler core.");
  m.histogram({}, decision_seconds_);

  // The estimators' relative error on finished jobs, (planned − peak) / peak: negative buckets
  // are under-estimates (the ones that cause OOMs), positive ones memory left idle.
  std::map<std::string, Histogram> err;
  for (const EstimateOutcome& o : store_.estimate_outcomes()) {
    auto it = err.try_emplace(o.source, std::vector<double>{-0.5, -0.25, -0.1, -0.05, 0, 0.05, 0.1, 0.25, 0.5, 1, 2}).first;
    it->second.observe(static_cast<double>(o.need_mib - o.peak_mib) / static_cast<double>(o.peak_mib));
  }
  m.family("colo_estimator_error_ratio", "histogram",
           "Finished jobs' (planned memory - observed peak) / observed peak, by estimator; below 0 is an under-estimate.");
  for (const auto& [src, h] : err) m.histogram({{"estimator", src}}, h);

  m.family("colo_build_info", "gauge", "colod's version (always 1).");
  m.sample({{"version", COLO_VERSION}}, 1);
  return m.str();
}

}  // namespace colo::daemon
