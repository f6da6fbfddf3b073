#include "core/policy/filters.h"

namespace colo {

namespace {

class Usable final : public Filter {
 public:
  std::string_view name() const override { return "usable"; }
  bool admit(const Candidate& c, const PlacementRequest&) const override {
    const GpuSnapshot& g = *c.gpu;
    if (!g.healthy || g.drained || c.held_exclusively) return false;
    return g.mode != SharingMode::MigInstance || c.jobs == 0;
  }
};

class IdleOnly final : public Filter {
 public:
  std::string_view name() const override { return "idle_only"; }
  bool admit(const Candidate& c, const PlacementRequest&) const override {
    return c.jobs == 0 && c.gpu->running.empty();
  }
};

class FitsMemory final : public Filter {
 public:
  FitsMemory(MiB margin, MiB min_free) : margin_(margin), min_free_(min_free) {}
  std::string_view name() const override { return "fits_memory"; }
  bool admit(const Candidate& c, const PlacementRequest& r) const override {
    if (r.need_mib) return c.available_mib >= *r.need_mib + margin_;
    return c.available_mib >= min_free_;
  }

 private:
  MiB margin_, min_free_;
};

class SmactBelow final : public Filter {
 public:
  explicit SmactBelow(double cap) : cap_(cap) {}
  std::string_view name() const override { return "smact_below"; }
  bool admit(const Candidate& c, const PlacementRequest&) const override {
    return !c.gpu->smact || *c.gpu->smact < cap_;
  }

 private:
  double cap_;
};

}  // namespace

FilterPtr usable() { return std::make_shared<Usable>(); }
FilterPtr idle_only() { return std::make_shared<IdleOnly>(); }
FilterPtr fits_memory(MiB margin_mib, MiB min_free_unknown_mib) {
  return std::make_shared<FitsMemory>(margin_mib, min_free_unknown_mib);
}
FilterPtr smact_below(double cap) { return std::make_shared<SmactBelow>(cap); }

}  // namespace colo
