#pragma once
// Paths of the shared CARMA data, relative to the repository (tests run from any directory).
#include <string>

namespace colo::sim::test {

inline std::string carma(const std::string& rel) { return std::string(COLO_SOURCE_DIR) + "/data/carma/" + rel; }

}  // namespace colo::sim::test
