#include "estimate/evaluation/evaluation.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "estimate/trace/carma_probe.h"
#include "estimate/trace/probe_runner.h"
#include "estimate/trace/trace_library.h"

namespace colo::estimate {

namespace {
double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Nearest-rank on the sorted values, interpolated (numpy's default "linear").
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}
}  // namespace

EvalSummary summarize(const std::vector<EvalRow>& rows, MiB gpu_total_mib) {
  EvalSummary s;
  std::vector<double> abs_err, err;
  std::size_t under = 0, b1 = 0, b2 = 0, b8 = 0;
  for (const auto& r : rows) {
    if (r.skipped) {
      ++s.skipped;
      continue;
    }
    if (r.oom) {
      ++s.oom_rows;
      if (r.estimate > gpu_total_mib) ++s.oom_predicted;
      continue;
    }
    if (!r.measured || *r.measured <= 0) {
      ++s.skipped;
      continue;
    }
    const double m = static_cast<double>(*r.measured), e = static_cast<double>(r.estimate);
    err.push_back((e - m) / m);
    abs_err.push_back(std::abs(e - m) / m);
    if (e < m) ++under;
    auto bucket = [](double x, double gib) { return static_cast<std::int64_t>(std::floor(x / (gib * 1024.0))); };
    b1 += bucket(e, 1) == bucket(m, 1);
    b2 += bucket(e, 2) == bucket(m, 2);
    b8 += bucket(e, 8) == bucket(m, 8);
  }
  s.n = abs_err.size();
  if (s.n > 0) {
    const double n = static_cast<double>(s.n);
    s.median_abs_rel_err = quantile(abs_err, 0.5);
    s.p90_abs_rel_err = quantile(abs_err, 0.9);
    s.max_abs_rel_err = *std::max_element(abs_err.begin(), abs_err.end());
    double sum = 0;
    for (double x : abs_err) sum += x;
    s.mean_abs_rel_err = sum / n;
    s.median_rel_err = quantile(err, 0.5);
    s.under_rate = static_cast<double>(under) / n;
    s.bucket_acc_1gib = static_cast<double>(b1) / n;
    s.bucket_acc_2gib = static_cast<double>(b2) / n;
    s.bucket_acc_8gib = static_cast<double>(b8) / n;
  }
  return s;
}

nlohmann::ordered_json EvalSummary::to_json() const {
  nlohmann::ordered_json j;
  j["n"] = n;
  j["median_abs_rel_err"] = median_abs_rel_err;
  j["p90_abs_rel_err"] = p90_abs_rel_err;
  j["max_abs_rel_err"] = max_abs_rel_err;
  j["mean_abs_rel_err"] = mean_abs_rel_err;
  j["median_rel_err"] = median_rel_err;
  j["under_rate"] = under_rate;
  j["bucket_acc_1gib"] = bucket_acc_1gib;
  j["bucket_acc_2gib"] = bucket_acc_2gib;
  j["bucket_acc_8gib"] = bucket_acc_8gib;
  j["oom_rows"] = oom_rows;
  j["oom_predicted"] = oom_predicted;
  j["skipped"] = skipped;
  return j;
}

std::vector<EvalRow> evaluate(const std::vector<DatasetRow>& rows, const Estimator& est, const std::string& gpu,
                              Optimizer default_optimizer, const TraceLibrary* library,
                              const std::function<void(std::size_t, std::size_t)>& progress,
                              const std::string& keep_traces_dir) {
  std::vector<EvalRow> out;
  out.reserve(rows.size());
  const bool oracle = est.name() == "oracle";
  // trace/faketensor probe each row's network (rows that differ only in epochs share one trace).
  const bool probed = est.name() == "trace" || est.name() == "faketensor";
  std::map<std::string, std::shared_ptr<const ProbeTrace>> traces;
  // --keep-traces: the file each probe key was kept as, and the index, one line per row.
  std::map<std::string, std::string> kept;
  std::ofstream index;
  const bool keep = probed && !library && !keep_traces_dir.empty();
  if (keep) {
    const std::string path = keep_traces_dir + "/index.jsonl";
    index.open(path, std::ios::trunc);
    if (!index) throw UserError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  }
  auto record = [&](const nlohmann::json& j) {
    if (!keep) return;
    index << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n" << std::flush;
    if (!index) throw UserError(fmt::format("cannot write {}/index.jsonl", keep_traces_dir));
  };
  std::size_t started = 0;
  for (const auto& r : rows) {
    if (progress) progress(started++, rows.size());
    EvalRow e;
    e.id = r.id;
    e.measured = r.measured;
    e.oom = r.oom;
    // A pre-recorded trace stands in for the graph (GPUMemNet rows whose layer list is empty but
    // that the generator rebuilds: the head alone).
    const TraceLibrary::Entry* entry = probed && library ? library->find(r.id) : nullptr;
    const bool from_library = entry && !entry->trace_path.empty();
    if ((!r.graph && !from_library) || (!r.oom && !r.measured)) {
      e.skipped = true;
      out.push_back(e);  // nothing to compare with; counted as skipped
      continue;
    }
    EstimateRequest req;
    req.gpu = gpu;
    req.batch = r.batch;
    req.optimizer = r.optimizer.value_or(default_optimizer);
    req.graph = r.graph.get();
    std::shared_ptr<const ProbeTrace> trace;
    if (probed && library) {
      if (!from_library) {
        e.skipped = true;
        e.skipped_because = entry ? entry->reason : "no trace in " + library->dir();
        out.push_back(e);
        continue;
      }
      try {
        trace = library->load(*entry);
      } catch (const UserError& ex) {
        throw UserError(r.location + ": " + ex.what());
      }
      req.trace = trace.get();
    } else if (probed) {
      std::string why;
      const auto pr = carma_probe_request(r, why);
      if (!pr) {
        e.skipped = true;
        e.skipped_because = why;
        record({{"filename", r.id}, {"status", "skipped"}, {"reason", why}});
        out.push_back(e);
        continue;
      }
      const std::string key = pr->to_json().dump();
      auto it = traces.find(key);
      if (it == traces.end()) {
        ProbeLimits limits;
        if (keep) {
          kept[key] = fmt::format("{}.trace", kept.size());
          limits.keep_trace_as = keep_traces_dir + "/" + kept[key];
        }
        try {
          it = traces.emplace(key, std::make_shared<const ProbeTrace>(run_probe(*pr, limits).trace)).first;
        } catch (const UserError& ex) {
          throw UserError(r.location + ": " + ex.what());
        }
      }
      if (keep) record({{"filename", r.id}, {"status", "ok"}, {"trace", kept[key]},
                         {"measured_mib", r.measured ? nlohmann::json(*r.measured) : nlohmann::json(nullptr)}});
      trace = it->second;
      req.trace = trace.get();
    }
    if (oracle) req.stated_mib = r.measured;
    try {
      e.estimate = est.estimate(req).mib;
    } catch (const UserError& ex) {
      throw UserError(r.location + ": " + ex.what());
    }
    out.push_back(e);
  }
  if (progress) progress(rows.size(), rows.size());
  return out;
}

}  // namespace colo::estimate
