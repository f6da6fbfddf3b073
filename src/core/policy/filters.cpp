#include "core/policy/filters.h"

#include <algorithm>

#include <fmt/format.h>

namespace colo {

std::string gpu_list(std::span<const Candidate* const> cs) {
  std::string out;
  for (const Candidate* c : cs) out += fmt::format("{}GPU {}", out.empty() ? "" : ", ", c->gpu->index);
  return out;
}

std::string format_gib(MiB mib) { return fmt::format("{:.1f} GiB", static_cast<double>(mib) / kGiB); }

std::string Filter::why_not(std::span<const Candidate* const> rejected, const PlacementRequest&) const {
  return fmt::format("{} refused {}", name(), gpu_list(rejected));
}

void Filter::retain(std::span<const Candidate> cands, const PlacementRequest& r, std::vector<int>& positions) const {
  std::erase_if(positions, [&](int p) { return !admit(cands[static_cast<size_t>(p)], r); });
}

namespace {

std::string jobs_on(const Candidate& c) {
  if (c.gpu->running.empty()) return "taken in this round";
  std::string ids;
  for (JobId j : c.gpu->running) ids += fmt::format("{}{}", ids.empty() ? "" : ", ", j);
  return fmt::format("runs job{} {}", c.gpu->running.size() > 1 ? "s" : "", ids);
}

class Usable final : public FilterImpl<Usable> {
 public:
  std::string_view name() const override { return "usable"; }
  bool admit(const Candidate& c, const PlacementRequest&) const override {
    const GpuSnapshot& g = *c.gpu;
    if (!g.healthy || g.drained || c.held_alone) return false;
    return g.mode != SharingMode::MigInstance || c.jobs == 0;
  }
  std::string why_not(std::span<const Candidate* const> rejected, const PlacementRequest&) const override {
    std::string out;
    for (const Candidate* c : rejected) {
      const GpuSnapshot& g = *c->gpu;
      const char* why = !g.healthy ? "unhealthy"
                        : g.drained ? "drained"
                        : c->held_alone ? "held by a job that runs alone"
                                              : "is a MIG slot in use";
      out += fmt::format("{}GPU {} {}", out.empty() ? "" : ", ", g.index, why);
    }
    return out;
  }
};

class IdleOnly final : public FilterImpl<IdleOnly> {
 public:
  std::string_view name() const override { return "idle_only"; }
  bool admit(const Candidate& c, const PlacementRequest&) const override {
    return c.jobs == 0 && c.gpu->running.empty();
  }
  std::string why_not(std::span<const Candidate* const> rejected, const PlacementRequest&) const override {
    std::string out = "waits for an idle GPU:";
    for (size_t k = 0; k < rejected.size(); ++k)
      out += fmt::format("{} GPU {} {}", k ? "," : "", rejected[k]->gpu->index, jobs_on(*rejected[k]));
    return out;
  }
};

class FitsMemory final : public FilterImpl<FitsMemory> {
 public:
  FitsMemory(MiB margin, MiB min_free, bool floor_always) : margin_(margin), min_free_(min_free), floor_always_(floor_always) {}
  std::string_view name() const override { return floor_always_ ? "fits_memory_floor" : "fits_memory"; }
  bool admit(const Candidate& c, const PlacementRequest& r) const override {
    if (r.need_mib) return c.available_mib >= wanted(*r.need_mib, c);
    return c.available_mib >= floor_on(c);
  }
  std::string why_not(std::span<const Candidate* const> rejected, const PlacementRequest& r) const override {
    const Candidate* best = *std::max_element(rejected.begin(), rejected.end(), [](const Candidate* a, const Candidate* b) {
      return a->available_mib < b->available_mib;
    });
    const std::string most = fmt::format("most free is {} on GPU {}", format_gib(best->available_mib), best->gpu->index);
    if (!r.need_mib) return fmt::format("need unknown: wants {} free; {}", format_gib(floor_on(*best)), most);
    if (wanted(*r.need_mib, *best) > *r.need_mib + margin_)
      return fmt::format("needs {} (the free-memory floor; the estimate is {}); {}", format_gib(min_free_),
                         format_gib(*r.need_mib), most);
    if (margin_ > 0) return fmt::format("needs {} + {} margin; {}", format_gib(*r.need_mib), format_gib(margin_), most);
    return fmt::format("needs {} free; {}", format_gib(*r.need_mib), most);
  }

 private:
  // The free-memory floor, on a GPU (MIG instance) smaller than the floor itself: all of it free.
  // Without the cap a 1g.5gb instance (4864 MiB) could never take a job under the 5 GiB floor.
  MiB floor_on(const Candidate& c) const { return std::min(min_free_, c.gpu->total_mib); }
  MiB wanted(MiB need, const Candidate& c) const {
    return floor_always_ ? std::max(need + margin_, floor_on(c)) : need + margin_;
  }
  MiB margin_, min_free_;
  bool floor_always_;
};

class SmactBelow final : public FilterImpl<SmactBelow> {
 public:
  explicit SmactBelow(double cap) : cap_(cap) {}
  std::string_view name() const override { return "smact_below"; }
  bool admit(const Candidate& c, const PlacementRequest&) const override {
    return !c.gpu->smact || *c.gpu->smact < cap_;
  }
  std::string why_not(std::span<const Candidate* const> rejected, const PlacementRequest&) const override {
    std::string on;
    for (const Candidate* c : rejected)
      on += fmt::format("{}GPU {} ({:.0f} %)", on.empty() ? "" : ", ", c->gpu->index, c->gpu->smact.value_or(0) * 100);
    return fmt::format("SMACT at or above the {:.0f} % cap on {}", cap_ * 100, on);
  }

 private:
  double cap_;
};

class Holds final : public FilterImpl<Holds> {
 public:
  explicit Holds(MiB need) : need_(need) {}
  std::string_view name() const override { return "holds"; }
  bool admit(const Candidate& c, const PlacementRequest&) const override { return c.gpu->total_mib >= need_; }
  std::string why_not(std::span<const Candidate* const> rejected, const PlacementRequest&) const override {
    std::string on;
    for (const Candidate* c : rejected) on += fmt::format("{}GPU {}", on.empty() ? "" : ", ", c->gpu->index);
    return fmt::format("smaller than the {} MiB it needs: {}", need_, on);
  }

 private:
  MiB need_;
};

class SmactPredicted final : public FilterImpl<SmactPredicted> {
 public:
  explicit SmactPredicted(double cap) : cap_(cap) {}
  std::string_view name() const override { return "smact_predicted"; }
  bool admit(const Candidate& c, const PlacementRequest& r) const override {
    if (!r.job || !r.job->solo_smact) return true;
    if (c.jobs == 0 && c.gpu->running.empty()) return true;  // alone it may use the whole GPU, as on an idle one
    return c.placed_smact + *r.job->solo_smact <= cap_ + 1e-9;
  }
  std::string why_not(std::span<const Candidate* const> rejected, const PlacementRequest& r) const override {
    std::string on;
    for (const Candidate* c : rejected)
      on += fmt::format("{}GPU {} ({:.0f} % placed)", on.empty() ? "" : ", ", c->gpu->index, c->placed_smact * 100);
    return fmt::format("predicted SMACT {:.0f} % would pass the {:.0f} % cap on {}",
                       r.job && r.job->solo_smact ? *r.job->solo_smact * 100 : 0.0, cap_ * 100, on);
  }

 private:
  double cap_;
};

class AddsProgress final : public FilterImpl<AddsProgress> {
 public:
  explicit AddsProgress(double interference) : k_(interference) {}
  std::string_view name() const override { return "adds_progress"; }
  bool admit(const Candidate& c, const PlacementRequest& r) const override {
    if (!r.job || !r.job->solo_smact || c.jobs == 0) return true;
    const double n = c.jobs;
    return (n + 1) / floor_of(c.placed_smact + *r.job->solo_smact, n + 1) > n / floor_of(c.placed_smact, n);
  }
  std::string why_not(std::span<const Candidate* const> rejected, const PlacementRequest& r) const override {
    std::string on;
    for (const Candidate* c : rejected)
      on += fmt::format("{}GPU {} ({} job{}, {:.0f} % placed)", on.empty() ? "" : ", ", c->gpu->index, c->jobs,
                        c->jobs == 1 ? "" : "s", c->placed_smact * 100);
    return fmt::format("predicted SMACT {:.0f} % would slow the jobs on {} more than it adds ({:g} per co-runner)",
                       r.job && r.job->solo_smact ? *r.job->solo_smact * 100 : 0.0, on, k_);
  }

 private:
  double floor_of(double demand, double jobs) const { return std::max(1.0, demand) * (1 + k_ * (jobs - 1)); }
  double k_;
};

}  // namespace

FilterPtr usable() { return std::make_shared<Usable>(); }
FilterPtr idle_only() { return std::make_shared<IdleOnly>(); }
FilterPtr holds(MiB need_mib) { return std::make_shared<Holds>(need_mib); }
FilterPtr fits_memory(MiB margin_mib, MiB min_free_unknown_mib, bool floor_always) {
  return std::make_shared<FitsMemory>(margin_mib, min_free_unknown_mib, floor_always);
}
FilterPtr smact_below(double cap) { return std::make_shared<SmactBelow>(cap); }
FilterPtr smact_predicted(double cap) { return std::make_shared<SmactPredicted>(cap); }
FilterPtr adds_progress(double interference) { return std::make_shared<AddsProgress>(interference); }

}  // namespace colo
