#include "daemon/history_estimator.h"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "daemon/store.h"

namespace colo::daemon {

std::string job_fingerprint(const std::vector<std::string>& argv, int gpus, const nlohmann::json& inputs) {
  // nlohmann::json objects are std::map-ordered, so dump() is canonical.
  const std::string canon = nlohmann::json{{"argv", argv}, {"gpus", gpus}, {"inputs", inputs}}.dump();
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : canon) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

std::optional<MiB> HistoryEstimator::estimate(const std::string& fingerprint) const {
  auto peak = store_.history_peak(fingerprint);
  if (!peak || *peak <= 0) return std::nullopt;
  return static_cast<MiB>(std::ceil(static_cast<double>(*peak) * (1.0 + margin_)));
}

void HistoryEstimator::record(const std::string& fingerprint, MiB peak, double now) {
  if (peak > 0) store_.record_history(fingerprint, peak, now);
}

}  // namespace colo::daemon
