#include "sim/workloads/workload_catalog.h"

#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "core/limits.h"
#include "core/parse_number.h"
#include "estimate/optimizer.h"
#include "sim/workloads/csv_table.h"
#include "sim/models/sm_activity.h"
#include "sim/workloads/workload_assumptions.h"

namespace colo::sim {

namespace {

std::optional<MiB> optional_mib(const CsvTable& t, const CsvTable::Row& r, std::size_t col, std::string_view what) {
  // Range-checked before rounding: llround of a value like 9e300 is undefined.
  auto v = t.optional_number(r, col, -CsvTable::kAny, static_cast<double>(limits::kMaxGpuMiB));
  if (!v) return std::nullopt;
  if (*v <= 0) throw UserError(fmt::format("{}: {} must be positive, got {}", t.where(r), what, r.cells[col]));
  return round_checked(*v, t.where(r, col), 1, limits::kMaxGpuMiB);
}

WorkloadCatalog from_table(const CsvTable& t, const SmActivityTable& smact_table) {
  const size_t c_name = t.require("workload"), c_model = t.require("model"), c_dataset = t.require("dataset"),
               c_batch = t.require("batch_size"), c_gpus = t.require("gpus"), c_epochs = t.require("epochs"),
               c_emin = t.require("epoch_minutes"), c_mem = t.require("measured_mib"),
               c_horus = t.require("horus_mib"), c_fake = t.require("faketensor_mib"),
               c_gmn = t.require("gpumemnet_mib"), c_source = t.require("source");
  const auto c_summary = t.find("summary"), c_opt = t.find("optimizer"), c_seq = t.find("seq_len"),
             c_smact = t.find("smact"), c_busy = t.find("busy");
  t.reject_unasked_columns();

  std::vector<Workload> out;
  std::unordered_map<std::string, int> seen;
  for (const auto& r : t.rows()) {
    Workload w;
    w.name = t.text(r, c_name);
    if (w.name.empty()) throw UserError(fmt::format("{}: empty workload name", t.where(r)));
    if (auto [it, fresh] = seen.emplace(w.name, r.line); !fresh)
      throw UserError(fmt::format("{}: workload '{}' already defined on line {}", t.where(r), w.name, it->second));
    w.model = t.text(r, c_model);
    w.dataset = t.text(r, c_dataset);
    w.source = t.text(r, c_source);
    const long long batch = t.integer(r, c_batch);
    if (batch < 1 || batch > limits::kMaxBatch)
      throw UserError(fmt::format("{}: batch_size must be 1..{}, got {}", t.where(r), limits::kMaxBatch, batch));
    w.batch_size = static_cast<int>(batch);
    const long long gpus = t.integer(r, c_gpus, 1, 1024);
    w.gpus = static_cast<int>(gpus);
    // Bounded so that epochs × epoch_minutes × 60 (the solo duration) stays finite.
    w.epochs = t.number(r, c_epochs, -CsvTable::kAny, 1e6);
    if (w.epochs <= 0) throw UserError(fmt::format("{}: epochs must be positive, got {}", t.where(r), w.epochs));

    auto epoch_minutes = t.optional_number(r, c_emin, -CsvTable::kAny, limits::kMaxSeconds / 60);
    auto true_mib = optional_mib(t, r, c_mem, "measured_mib");
    if (!epoch_minutes || !true_mib) {
      // Only rows that say so may lack published values, and only where colo documents the
      // assumption that replaces them (workload_assumptions.cpp, docs/SIMULATOR.md).
      const auto assumed = assumed_values(w.name);
      const std::string_view missing = !epoch_minutes ? "epoch_minutes" : "measured_mib";
      if (w.source != "no-runtime-published")
        throw UserError(fmt::format("{}: column '{}' is empty", t.where(r), missing));
      if (!epoch_minutes) {
        if (!assumed || !assumed->epoch_minutes)
          throw UserError(fmt::format("{}: workload '{}' has no published epoch time and colo documents no "
                                      "assumption for it", t.where(r), w.name));
        epoch_minutes = assumed->epoch_minutes;
        w.assumed_runtime = true;
      }
      if (!true_mib) {
        if (!assumed || !assumed->true_mib)
          throw UserError(fmt::format("{}: workload '{}' has no published memory and colo documents no "
                                      "assumption for it", t.where(r), w.name));
        true_mib = assumed->true_mib;
        w.assumed_memory = true;
      }
    }
    if (*epoch_minutes <= 0)
      throw UserError(fmt::format("{}: epoch_minutes must be positive, got {}", t.where(r), *epoch_minutes));
    w.epoch_minutes = *epoch_minutes;
    w.true_mib = *true_mib;
    w.solo_seconds = w.epochs * w.epoch_minutes * 60.0;
    w.horus_mib = optional_mib(t, r, c_horus, "horus_mib");
    w.faketensor_mib = optional_mib(t, r, c_fake, "faketensor_mib");
    w.gpumemnet_mib = optional_mib(t, r, c_gmn, "gpumemnet_mib");
    if (c_summary) w.summary = t.text(r, *c_summary);
    if (c_opt) {
      w.optimizer = t.text(r, *c_opt);
      if (!w.optimizer.empty()) {
        try {
          estimate::parse_optimizer(w.optimizer);
        } catch (const UserError& e) {
          throw UserError(fmt::format("{}: {}", t.where(r, *c_opt), e.what()));
        }
      }
    }
    if (c_seq) {
      if (!t.text(r, *c_seq).empty()) w.seq_len = static_cast<int>(t.integer(r, *c_seq, 1, limits::kMaxSeqLen));
    }
    std::optional<double> smact;
    if (c_smact) smact = t.optional_number(r, *c_smact);
    if (smact) {
      if (*smact <= 0 || *smact > 1)
        throw UserError(fmt::format("{}: smact must be in (0, 1], got {}", t.where(r), *smact));
      w.smact = *smact;
      w.smact_class = "csv";
    } else {
      const auto a = assumed_sm_activity(w.model, w.dataset, w.batch_size, smact_table);
      if (!a)
        throw UserError(fmt::format("{}: cannot tell the SM activity of dataset '{}' (known: mnist, cifar10, "
                                    "cifar100, imagenet, wiki; or add an smact column)", t.where(r), w.dataset));
      w.smact = a->value;
      w.smact_class = a->workload_class;
    }
    if (c_busy) w.busy = t.optional_number(r, *c_busy);
    if (w.busy && !(*w.busy >= w.smact && *w.busy <= 1))
      throw UserError(fmt::format("{}: busy must be in [smact, 1] = [{:g}, 1] (a kernel runs whenever SMs are active), "
                                  "got {}", t.where(r), w.smact, *w.busy));
    out.push_back(std::move(w));
  }
  if (out.empty()) throw UserError(fmt::format("{}: no workloads", t.path()));
  WorkloadCatalog c = WorkloadCatalog::from(std::move(out));
  return c;
}

}  // namespace

WorkloadCatalog WorkloadCatalog::load(const std::string& path, const SmActivityTable& smact) {
  WorkloadCatalog c = from_table(CsvTable::read(path), smact);
  c.path_ = path;
  return c;
}

WorkloadCatalog WorkloadCatalog::parse(std::string_view text, const std::string& path, const SmActivityTable& smact) {
  WorkloadCatalog c = from_table(CsvTable::parse(text, path), smact);
  c.path_ = path;
  return c;
}

WorkloadCatalog WorkloadCatalog::from(std::vector<Workload> workloads) {
  WorkloadCatalog c;
  c.workloads_ = std::move(workloads);
  c.index();
  return c;
}

void WorkloadCatalog::index() {
  by_name_.clear();
  for (size_t i = 0; i < workloads_.size(); ++i) by_name_.emplace(workloads_[i].name, i);
}

const Workload* WorkloadCatalog::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &workloads_[it->second];
}

}  // namespace colo::sim
