#include "sim/estimator.h"

#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/limits.h"
#include "core/parse_number.h"
#include "estimate/estimator.h"
#include "estimate/graph/summary_file.h"
#include "estimate/optimizer.h"
#include "estimate/trace/carma_probe.h"
#include "estimate/trace/probe_runner.h"

namespace colo::sim {

namespace {

Estimator from_column(std::optional<MiB> Workload::*column, std::string source) {
  return [column, source](const Workload& w) {
    const auto& v = w.*column;
    return v ? MemoryNeed::of(*v, source) : MemoryNeed::unknown();
  };
}

// Runs a colo estimator on the workload's summary file (summaries/ next to the catalog), once
// per workload: a trace names the same workload many times.
Estimator live(std::string name, const EstimatorContext& ctx) {
  auto cache = std::make_shared<std::map<std::string, MemoryNeed>>();
  return [name = std::move(name), dir = ctx.summaries_dir, cache](const Workload& w) {
    if (auto it = cache->find(w.name); it != cache->end()) return it->second;
    if (w.summary.empty()) throw UserError(fmt::format("workload '{}' names no summary file for --estimator {}", w.name, name));
    std::optional<std::filesystem::path> file;
    try {
      file = estimate::find_summary_file(dir, w.summary);
    } catch (const UserError& e) {
      throw UserError(fmt::format("workload '{}': {}", w.name, e.what()));
    }
    if (!file) throw UserError(fmt::format("workload '{}': summary '{}' not found in {}", w.name, w.summary, dir.string()));
    const estimate::Estimate e = estimate::estimate_from_summary(file->string(), w.batch_size,
                                                                 w.optimizer.empty() ? "adam" : w.optimizer, name,
                                                                 w.seq_len.value_or(0));
    const MemoryNeed need = MemoryNeed::of(e.mib, name);
    cache->emplace(w.name, need);
    return need;
  };
}

// The probe on each workload's own network (the carma workloads it can rebuild: torchvision
// CNNs, the transformer model files), replayed by the trace estimator; once per distinct
// (network, input, batch, optimizer). A workload the probe cannot rebuild falls back to the next
// estimator, allocsim on its summary, and says so in the need's source.
Estimator probed(std::string name, const EstimatorContext& ctx) {
  auto cache = std::make_shared<std::map<std::string, MemoryNeed>>();
  auto fallback = live("allocsim", ctx);
  return [name = std::move(name), cache, fallback](const Workload& w) {
    if (auto it = cache->find(w.name); it != cache->end()) return it->second;
    estimate::DatasetRow row;
    row.id = w.name;
    row.model = w.model;
    row.data = w.dataset;
    row.batch = w.batch_size;
    row.gpus = w.gpus;
    row.seq_len = w.seq_len.value_or(0);
    if (!w.optimizer.empty()) row.optimizer = estimate::parse_optimizer(w.optimizer);
    std::string why;
    MemoryNeed need;
    if (const auto req = estimate::carma_probe_request(row, why)) {
      try {
        const auto run = estimate::run_probe(*req);
        estimate::EstimateRequest er;
        er.batch = req->batch;
        er.trace = &run.trace;
        need = MemoryNeed::of(estimate::make_estimator(name)->estimate(er).mib, name);
      } catch (const UserError& e) {
        throw UserError(fmt::format("workload '{}': {}", w.name, e.what()));
      }
    } else {
      need = fallback(w);
      need.source = fmt::format("allocsim (no probe model: {})", why);
    }
    cache->emplace(w.name, need);
    return need;
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
    // The prototype's published GPUMemNet figures, as the thesis used them.
    factories["gpumemnet-csv"] = [](const EstimatorContext&) {
      return from_column(&Workload::gpumemnet_mib, "gpumemnet-csv");
    };
    // Live: computed by colo's own estimators from each workload's model summary.
    for (const char* name : {"allocsim", "gpumemnet"})
      factories[name] = [name](const EstimatorContext& ctx) { return live(name, ctx); };
    // Live from the workload's own PyTorch network, probed on the CPU (python3-torch).
    factories["trace"] = [](const EstimatorContext& ctx) { return probed("trace", ctx); };
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
  if (name.substr(0, 6) == "fixed:") {
    const MiB m = parse_mib(name.substr(6), "estimator fixed:SIZE", 1, limits::kMaxGpuMiB);
    return Estimator([m](const Workload&) { return MemoryNeed::of(m, "fixed"); });
  }
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
