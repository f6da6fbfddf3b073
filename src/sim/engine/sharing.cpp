#include "sim/engine/engine.h"

#include <algorithm>
#include <cmath>

// Co-runners' slowdowns (sharing model, or the MIG instance alone) and each physical GPU's power.

namespace colo::sim::detail {

void Engine::reshare(const std::vector<int>& gs) {
  for (int g : gs) {
    GpuRt& r = gpus_[static_cast<size_t>(g)];
    solo_buf_.clear();
    busy_buf_.clear();
    for (JobId j : r.active) {
      solo_buf_.push_back(jobs_[j].smact);
      busy_buf_.push_back(jobs_[j].busy);
    }
    r.slowdown.resize(r.active.size());
    double activity = 0;
    if (cfg_.mig.empty()) {
      activity = model_->share_into(solo_buf_, busy_buf_, r.slowdown);
    } else if (!r.active.empty()) {  // one job alone on its instance; SMACT relative to it
      const MigProfile& m = cfg_.mig[static_cast<size_t>(g % per_)];
      r.slowdown[0] = mig_slowdown(m, solo_buf_[0]);
      activity = std::min(1.0, solo_buf_[0] / m.capacity);
    }
    if (activity != r.hist.level()) {
      r.hist.set(now_, activity);
      r.hist.forget_before(static_cast<long>(std::floor(now_)), cfg_.smact_window_s);
      ++r.hist_version;
      WindowRt& w = window_[static_cast<size_t>(g)];
      w.level = r.hist.level();
      w.steady_from = r.hist.steady_from(cfg_.smact_window_s);
      if (w.watched && queued() > 0) {
        // Its window now moves differently: when does it fall under the cap?
        if (auto c = crossing(g, static_cast<long>(std::floor(now_)))) push_wake(*c);
      }
    }
  }
  power_buf_.assign(gs.begin(), gs.end());
  for (int g : gs) {
    const GpuRt& r = gpus_[static_cast<size_t>(g)];
    for (size_t k = 0; k < r.active.size(); ++k) {
      const JobId j = r.active[k];
      Attempt& a = runs_[j];
      double worst = std::max(1.0, r.slowdown[k]);
      for (int h : a.gpus)  // its other GPUs (a multi-GPU job runs at its slowest GPU's pace)
        if (h != g) worst = std::max(worst, slowdown_on(h, j));
      const double rate = 1.0 / worst;
      if (rate == a.rate && a.version > 0) continue;  // unchanged: its finish event stands
      a.rate = rate;
      ++a.version;
      heap_.push({now_ + a.remaining / a.rate, Ev::Finish, seq_++, j, a.version});
      if (a.gpus.size() > 1) power_buf_.insert(power_buf_.end(), a.gpus.begin(), a.gpus.end());
    }
  }
  for (int g : power_buf_) update_power(g);
}

double Engine::slowdown_on(int g, JobId j) const {
  const GpuRt& r = gpus_[static_cast<size_t>(g)];
  for (size_t k = 0; k < r.active.size(); ++k)
    if (r.active[k] == j) return r.slowdown[k];
  return 1.0;
}

void Engine::update_power(int g) {
  const int phys = g / per_;
  PowerRt& p = power_[static_cast<size_t>(phys)];
  p.work_area += p.work * (now_ - p.since);
  p.busy_area += (p.busy ? 1.0 : 0.0) * (now_ - p.since);
  p.since = now_;
  p.work = 0;
  p.busy = false;
  for (int k = phys * per_; k < (phys + 1) * per_; ++k)
    for (JobId j : gpus_[static_cast<size_t>(k)].active) {
      p.work += jobs_[j].smact * runs_[j].rate;
      p.busy = true;
    }
  p.work = std::min(1.0, p.work);
}

}  // namespace colo::sim::detail
