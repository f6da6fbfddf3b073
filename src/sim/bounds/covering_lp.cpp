#include "sim/bounds/covering_lp.h"

#include <algorithm>
#include <stdexcept>

#include <ClpSimplex.hpp>
#include <fmt/format.h>

namespace colo::sim {

struct CoveringLp::Impl {
  ClpSimplex lp;
  double scale = 1;  // b is divided by it
  int rows = 0;
};

CoveringLp::CoveringLp(std::span<const double> demand) : impl_(std::make_unique<Impl>()) {
  impl_->rows = static_cast<int>(demand.size());
  for (double b : demand) {
    if (!(b > 0)) throw std::invalid_argument("covering LP: every demand must be positive");
    impl_->scale = std::max(impl_->scale, b);
  }
  ClpSimplex& lp = impl_->lp;
  lp.setLogLevel(0);
  lp.resize(impl_->rows, 0);
  for (int r = 0; r < impl_->rows; ++r) lp.setRowBounds(r, demand[static_cast<size_t>(r)] / impl_->scale, COIN_DBL_MAX);
}

CoveringLp::~CoveringLp() = default;

void CoveringLp::add_column(std::span<const std::pair<int, double>> entries) {
  std::vector<int> rows;
  std::vector<double> values;
  for (const auto& [r, a] : entries) {
    if (r < 0 || r >= impl_->rows || !(a > 0)) throw std::invalid_argument("covering LP: bad column entry");
    rows.push_back(r);
    values.push_back(a);
  }
  impl_->lp.addColumn(static_cast<int>(rows.size()), rows.data(), values.data(), 0.0, COIN_DBL_MAX, 1.0);
}

int CoveringLp::columns() const { return impl_->lp.numberColumns(); }

CoveringLp::Solution CoveringLp::solve() {
  ClpSimplex& lp = impl_->lp;
  lp.primal();
  if (lp.status() != 0)
    throw std::runtime_error(fmt::format("covering LP: Clp status {} (1 = infeasible, 2 = unbounded)", lp.status()));
  Solution s;
  s.objective = lp.objectiveValue() * impl_->scale;
  const double* y = lp.dualRowSolution();
  s.dual.assign(y, y + impl_->rows);
  for (double& v : s.dual) v = std::max(0.0, v);
  const double* x = lp.primalColumnSolution();
  s.x.assign(x, x + lp.numberColumns());
  for (double& v : s.x) v = std::max(0.0, v) * impl_->scale;
  return s;
}

}  // namespace colo::sim
