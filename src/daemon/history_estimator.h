#pragma once
// The history estimator: what the same job actually peaked at on this server. A job's
// fingerprint is its submitter (uid), working directory, command, GPU count and the estimator
// inputs its submitter gave (estimator, model summary digest, batch, optimizer, stated memory):
// two submissions with the same fingerprint are the same training run of the same user as far
// as memory goes. One user's runs never shrink another user's estimate.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.h"

namespace colo::daemon {

class Store;

// "u<uid>-" + a stable hex digest (FNV-1a 64 over a canonical JSON form of the rest).
std::string job_fingerprint(std::int64_t uid, const std::string& workdir, const std::vector<std::string>& argv,
                            int gpus, const nlohmann::json& inputs);

class HistoryEstimator {
 public:
  HistoryEstimator(Store& store, double margin) : store_(store), margin_(margin) {}
  // Observed peak plus margin, or nullopt when this fingerprint never finished here.
  std::optional<MiB> estimate(const std::string& fingerprint) const;
  // Records the peak of an attempt that finished successfully (an OOM attempt's peak is only a
  // lower bound of the need, so it is not history).
  void record(const std::string& fingerprint, MiB peak, double now);
  // The same job's solo SM activity: the mean GPU SMACT over earlier runs that had their GPUs to
  // themselves (the smact_predicted filter's input, preferred to a model's prediction).
  std::optional<double> smact(const std::string& fingerprint) const;
  void record_smact(const std::string& fingerprint, double smact, double now);

 private:
  Store& store_;
  double margin_;
};

}  // namespace colo::daemon
