#pragma once
// Values the catalog does not publish, filled in by documented assumptions (docs/SIMULATOR.md,
// "Assumptions"). Only rows marked source=no-runtime-published may use them.
#include <optional>
#include <string_view>

#include "core/units.h"

namespace colo::sim {

struct AssumedValues {
  std::optional<double> epoch_minutes;
  std::optional<MiB> true_mib;
  std::string_view why;
};

// nullopt when colo has no documented assumption for the workload.
std::optional<AssumedValues> assumed_values(std::string_view workload_name);

}  // namespace colo::sim
