#include "estimate/gpumemnet/gpumemnet_metrics.h"

#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/error.h"

namespace colo::estimate {

ClassificationScores score_classification(const std::vector<int>& truth, const std::vector<int>& predicted) {
  if (truth.size() != predicted.size()) {
    throw UserError(fmt::format("scores: {} true labels but {} predictions", truth.size(), predicted.size()));
  }
  ClassificationScores s;
  s.n = static_cast<int>(truth.size());
  if (truth.empty()) return s;
  struct Counts { int tp = 0, fp = 0, fn = 0; };
  std::map<int, Counts> per_class;
  int correct = 0;
  for (std::size_t i = 0; i < truth.size(); ++i) {
    if (truth[i] == predicted[i]) {
      ++correct;
      ++per_class[truth[i]].tp;
    } else {
      ++per_class[truth[i]].fn;
      ++per_class[predicted[i]].fp;
    }
  }
  for (const auto& [label, c] : per_class) {
    const double p = c.tp + c.fp > 0 ? static_cast<double>(c.tp) / (c.tp + c.fp) : 0.0;
    const double r = c.tp + c.fn > 0 ? static_cast<double>(c.tp) / (c.tp + c.fn) : 0.0;
    s.precision += p;
    s.recall += r;
    s.f1 += p + r > 0 ? 2 * p * r / (p + r) : 0.0;
  }
  const double k = static_cast<double>(per_class.size());
  s.accuracy = static_cast<double>(correct) / static_cast<double>(truth.size());
  s.precision /= k;
  s.recall /= k;
  s.f1 /= k;
  return s;
}

ScoreSummary summarize(const std::vector<ClassificationScores>& folds) {
  ScoreSummary out;
  if (folds.empty()) return out;
  const double k = static_cast<double>(folds.size());
  auto field = [](ClassificationScores& s, int i) -> double& {
    switch (i) {
      case 0: return s.accuracy;
      case 1: return s.precision;
      case 2: return s.recall;
      default: return s.f1;
    }
  };
  for (int i = 0; i < 4; ++i) {
    double sum = 0, sq = 0;
    for (auto f : folds) sum += field(f, i);
    const double mean = sum / k;
    for (auto f : folds) sq += (field(f, i) - mean) * (field(f, i) - mean);
    field(out.mean, i) = mean;
    field(out.stddev, i) = std::sqrt(sq / k);
  }
  for (const auto& f : folds) out.mean.n += f.n;
  return out;
}

}  // namespace colo::estimate
