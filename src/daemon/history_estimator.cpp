#include "daemon/history_estimator.h"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "daemon/store.h"

namespace colo::daemon {

std::string job_fingerprint(std::int64_t uid, const std::string& workdir, const std::vector<std::string>& argv,
                            int gpus, const nlohmann::json& inputs) {
  // nlohmann::json objects are std::map-ordered, so dump() is canonical. `inputs` arrives from
  // the API with its nesting depth bounded at parse time, so dump()'s recursion is bounded too.
  const std::string canon =
      nlohmann::json{{"argv", argv}, {"gpus", gpus}, {"inputs", inputs}, {"workdir", workdir}}.dump();
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : canon) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  // The uid is spelled out, not only hashed: a history row can never be matched (or poisoned,
  // e.g. by a crafted hash collision) by another user's submission.
  return fmt::format("u{}-{:016x}", uid, h);
}

std::optional<MiB> HistoryEstimator::estimate(const std::string& fingerprint) const {
  auto peak = store_.history_peak(fingerprint);
  if (!peak || *peak <= 0) return std::nullopt;
  return static_cast<MiB>(std::ceil(static_cast<double>(*peak) * (1.0 + margin_)));
}

std::optional<double> HistoryEstimator::smact(const std::string& fingerprint) const {
  return store_.history_smact(fingerprint);
}

void HistoryEstimator::record_smact(const std::string& fingerprint, double smact, double now) {
  if (smact >= 0 && smact <= 1) store_.record_history_smact(fingerprint, smact, now);
}

void HistoryEstimator::record(const std::string& fingerprint, MiB peak, double now) {
  if (peak > 0) store_.record_history(fingerprint, peak, now);
}

}  // namespace colo::daemon
