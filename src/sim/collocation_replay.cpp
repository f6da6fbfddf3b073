#include "sim/collocation_replay.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"

namespace colo::sim {

namespace {

double serial(const std::vector<CollocatedJob>& jobs) {
  double s = 0;
  for (const CollocatedJob& j : jobs) s += j.solo_s;
  return s;
}

}  // namespace

CollocationResult replay_shared(const std::vector<CollocatedJob>& jobs, const SharingModel& model) {
  CollocationResult r;
  r.serial_s = serial(jobs);
  r.jobs.resize(jobs.size());
  std::vector<double> left(jobs.size());
  std::vector<std::size_t> active;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    r.jobs[i].name = jobs[i].name;
    left[i] = jobs[i].solo_s;
    if (left[i] > 0) active.push_back(i);
  }
  std::vector<double> smact, busy, slowdown;
  double now = 0;
  while (!active.empty()) {
    smact.clear();
    busy.clear();
    for (std::size_t i : active) {
      smact.push_back(jobs[i].smact);
      busy.push_back(jobs[i].busy);
    }
    slowdown.assign(active.size(), 1.0);
    model.share_into(smact, busy, slowdown);
    // Advance to the next completion; everyone progresses at 1/slowdown until then.
    double dt = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < active.size(); ++k) dt = std::min(dt, left[active[k]] * slowdown[k]);
    now += dt;
    std::vector<std::size_t> still;
    for (std::size_t k = 0; k < active.size(); ++k) {
      const std::size_t i = active[k];
      left[i] -= dt / slowdown[k];
      if (left[i] > 1e-9 * std::max(1.0, jobs[i].solo_s)) {
        still.push_back(i);
      } else {
        r.jobs[i].finish_s = now;
      }
    }
    active.swap(still);
  }
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    r.jobs[i].slowdown = jobs[i].solo_s > 0 ? r.jobs[i].finish_s / jobs[i].solo_s : 1.0;
    r.makespan_s = std::max(r.makespan_s, r.jobs[i].finish_s);
  }
  return r;
}

CollocationResult replay_mig(const std::vector<CollocatedJob>& jobs, const std::vector<MigProfile>& layout) {
  if (jobs.size() > layout.size())
    throw UserError(fmt::format("{} jobs but {} MIG instances: one job per instance", jobs.size(), layout.size()));
  CollocationResult r;
  r.serial_s = serial(jobs);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const MigProfile& m = layout[i];
    if (jobs[i].mem_mib > m.memory_mib)
      throw UserError(fmt::format("job '{}' needs {} MiB, more than a {} instance holds ({} MiB)", jobs[i].name,
                                  jobs[i].mem_mib, m.name, m.memory_mib));
    CollocatedOutcome o;
    o.name = jobs[i].name;
    o.slowdown = mig_slowdown(m, jobs[i].smact);
    o.finish_s = jobs[i].solo_s * o.slowdown;
    o.instance = m.name;
    r.makespan_s = std::max(r.makespan_s, o.finish_s);
    r.jobs.push_back(std::move(o));
  }
  return r;
}

}  // namespace colo::sim
