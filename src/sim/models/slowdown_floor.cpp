#include <algorithm>

#include "sim/models/sharing_model.h"

namespace colo::sim {

double SlowdownFloor::demand(double solo, double busy) const {
  if (busy_floor < 0) return std::clamp(solo, 0.0, 1.0);
  return busy >= 0 ? std::min(1.0, busy) : std::clamp(std::max(solo, busy_floor), 0.0, 1.0);
}

}  // namespace colo::sim
