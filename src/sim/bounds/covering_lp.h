#pragma once
// A covering linear programme solved column by column (COIN-OR Clp):
//
//   minimise Σ_c x_c   subject to   Σ_c a_rc x_c ≥ b_r (every row r),   x ≥ 0
//
// Every column costs 1. Columns are added between solves (column generation); each solve returns
// the row duals y (≥ 0), the prices a pricing step uses to find the next columns. Rows are scaled
// internally (only the duals and the objective are read back, and the duals do not depend on b's
// scale).
#include <memory>
#include <span>
#include <vector>

namespace colo::sim {

class CoveringLp {
 public:
  explicit CoveringLp(std::span<const double> demand);  // b; every b_r > 0
  ~CoveringLp();
  CoveringLp(const CoveringLp&) = delete;
  CoveringLp& operator=(const CoveringLp&) = delete;

  // One column: its nonzero coefficients (row, a_rc > 0).
  void add_column(std::span<const std::pair<int, double>> entries);
  int columns() const;

  struct Solution {
    double objective = 0;    // Σ x at the optimum (in b's units)
    std::vector<double> dual;  // per row, ≥ 0 (tiny negative round-off clamped)
    std::vector<double> x;     // per column, in b's units
  };
  // Throws std::runtime_error when the solver fails (a row no column covers is infeasible).
  Solution solve();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace colo::sim
