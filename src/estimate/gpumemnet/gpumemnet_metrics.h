#pragma once
// Classification scores as the GPUMemNet thesis reports them (Tables 5.3/5.5): accuracy and the
// macro averages of precision, recall and F1. Macro averages run over every class that occurs
// among the true or the predicted labels (scikit-learn's rule); a class never predicted has
// precision 0, a class never true has recall 0.
#include <vector>

namespace colo::estimate {

struct ClassificationScores {
  double accuracy = 0;
  double precision = 0;  // macro
  double recall = 0;     // macro
  double f1 = 0;         // macro
  int n = 0;
};

ClassificationScores score_classification(const std::vector<int>& truth, const std::vector<int>& predicted);

// Mean and (population) standard deviation of each score over folds.
struct ScoreSummary {
  ClassificationScores mean;
  ClassificationScores stddev;
};
ScoreSummary summarize(const std::vector<ClassificationScores>& folds);

}  // namespace colo::estimate
