#include "sim/estimator.h"

#include <map>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace colo::sim {

namespace {

Estimator from_column(std::optional<MiB> Workload::*column, std::string source) {
  return [column, source](const Workload& w) {
    const auto& v = w.*column;
    return v ? MemoryNeed::of(*v, source) : MemoryNeed::unknown();
  };
}

struct Registry {
  std::mutex mu;
  std::map<std::string, EstimatorFactory, std::less<>> factories;
  Registry() {
    factories["none"] = [](const EstimatorContext&) {
      return Estimator([](const Workload&) { return MemoryNeed::unknown(); });
    };
    factories["oracle"] = [](const EstimatorContext&) {
      return Estimator([](const Workload& w) { return MemoryNeed::of(w.true_mib, "oracle"); });
    };
    factories["horus"] = [](const EstimatorContext&) { return from_column(&Workload::horus_mib, "horus"); };
    factories["faketensor"] = [](const EstimatorContext&) {
      return from_column(&Workload::faketensor_mib, "faketensor");
    };
    factories["gpumemnet"] = [](const EstimatorContext&) {
      return from_column(&Workload::gpumemnet_mib, "gpumemnet");
    };
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void register_estimator(std::string name, EstimatorFactory factory) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.factories[std::move(name)] = std::move(factory);
}

std::vector<std::string> estimator_names() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> out;
  for (const auto& kv : r.factories) out.push_back(kv.first);
  return out;
}

Estimator make_estimator(std::string_view name, const EstimatorContext& ctx) {
  EstimatorFactory f;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    if (auto it = r.factories.find(name); it != r.factories.end()) f = it->second;
  }
  if (!f) throw UserError(fmt::format("unknown estimator '{}' (known: {})", name, fmt::join(estimator_names(), ", ")));
  return f(ctx);
}

EstimatorContext estimator_context_for(const std::filesystem::path& workloads_csv) {
  EstimatorContext ctx;
  ctx.workloads_csv = workloads_csv;
  ctx.summaries_dir = workloads_csv.parent_path() / "summaries";
  return ctx;
}

}  // namespace colo::sim
