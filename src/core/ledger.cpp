#include "core/ledger.h"

#include <algorithm>

namespace colo {

Ledger::GpuTotals& Ledger::totals_for(int gpu) {
  if (gpu < 0 || gpu >= kDense) return by_gpu_sparse_[gpu];
  if (static_cast<std::size_t>(gpu) >= by_gpu_.size()) by_gpu_.resize(static_cast<std::size_t>(gpu) + 1);
  return by_gpu_[static_cast<std::size_t>(gpu)];
}

const Ledger::GpuTotals* Ledger::sparse_totals_of(int gpu) const {
  auto it = by_gpu_sparse_.find(gpu);
  return it == by_gpu_sparse_.end() ? nullptr : &it->second;
}

void Ledger::add_totals(int gpu, const Entry& e, int sign) {
  GpuTotals& t = totals_for(gpu);
  t.reserved += sign * e.reserved();
  t.jobs += sign;
  t.alone += e.alone ? sign : 0;
  t.smact += sign * e.smact.value_or(0.0);
  if (t.jobs == 0) {  // nothing left on it: no rounding residue of the sums either
    t = GpuTotals{};
    if (gpu < 0 || gpu >= kDense) by_gpu_sparse_.erase(gpu);
  }
}

void Ledger::reserve(JobId job, int gpu, MiB estimate, bool alone, Seconds now, std::optional<double> smact) {
  auto& per_gpu = by_job_[job];
  if (auto it = per_gpu.find(gpu); it != per_gpu.end()) {
    add_totals(gpu, it->second, -1);
    per_gpu.erase(it);
  }
  Entry e{std::max<MiB>(estimate, 0), 0, alone, now, smact};
  per_gpu.emplace(gpu, e);
  add_totals(gpu, e, +1);
}

void Ledger::observe(JobId job, int gpu, MiB used_mib) {
  auto j = by_job_.find(job);
  if (j == by_job_.end()) return;
  auto it = j->second.find(gpu);
  if (it == j->second.end() || used_mib <= it->second.observed_peak) return;
  const MiB before = it->second.reserved();
  it->second.observed_peak = used_mib;
  totals_for(gpu).reserved += it->second.reserved() - before;
}

bool Ledger::share(JobId job, int gpu, MiB reserve_mib) {
  auto j = by_job_.find(job);
  if (j == by_job_.end()) return false;
  auto it = j->second.find(gpu);
  if (it == j->second.end() || !it->second.alone) return false;
  add_totals(gpu, it->second, -1);
  it->second.alone = false;
  it->second.estimate = std::max<MiB>(reserve_mib, 0);
  add_totals(gpu, it->second, +1);
  return true;
}

void Ledger::release(JobId job) {
  auto j = by_job_.find(job);
  if (j == by_job_.end()) return;
  for (const auto& [gpu, e] : j->second) add_totals(gpu, e, -1);
  by_job_.erase(j);
}

// The single queries are the view's fields: one place reads the totals.
MiB Ledger::reserved_on(int gpu) const { return view(gpu).reserved; }
int Ledger::jobs_on(int gpu) const { return view(gpu).jobs; }
bool Ledger::held_alone(int gpu) const { return view(gpu).alone; }
double Ledger::predicted_smact(int gpu) const { return view(gpu).smact; }

MiB Ledger::available(const GpuSnapshot& g) const { return available(g, view(g.index).reserved); }


std::optional<Ledger::Entry> Ledger::entry(JobId job, int gpu) const {
  auto j = by_job_.find(job);
  if (j == by_job_.end()) return std::nullopt;
  auto it = j->second.find(gpu);
  if (it == j->second.end()) return std::nullopt;
  return it->second;
}

std::vector<int> Ledger::gpus_of(JobId job) const {
  std::vector<int> out;
  if (auto j = by_job_.find(job); j != by_job_.end())
    for (const auto& kv : j->second) out.push_back(kv.first);
  return out;
}

}  // namespace colo
