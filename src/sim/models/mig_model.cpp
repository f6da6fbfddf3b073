#include "sim/models/mig_model.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

namespace colo::sim {

namespace {
constexpr MiB kMemorySliceMiB = 4864;
}

std::vector<MigProfile> mig_profiles(const MigParams& p) {
  return {{"1g.5gb", 1, 1, 1 * kMemorySliceMiB, p.capacity_1g},
          {"2g.10gb", 2, 2, 2 * kMemorySliceMiB, p.capacity_2g},
          {"3g.20gb", 3, 4, 4 * kMemorySliceMiB, p.capacity_3g},
          {"4g.20gb", 4, 4, 4 * kMemorySliceMiB, p.capacity_4g},
          {"7g.40gb", 7, 8, 8 * kMemorySliceMiB, p.capacity_7g}};
}

std::vector<MigProfile> parse_mig_layout(std::string_view text, const MigParams& p) {
  const std::vector<MigProfile> known = mig_profiles(p);
  std::vector<MigProfile> out;
  int compute = 0, memory = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    start = comma + 1;
    auto it = std::find_if(known.begin(), known.end(), [&](const MigProfile& m) { return m.name == item; });
    if (it == known.end())
      throw UserError(fmt::format("MIG layout '{}': unknown profile '{}' (1g.5gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb)",
                                  text, item));
    compute += it->compute_slices;
    memory += it->memory_slices;
    out.push_back(*it);
  }
  if (compute > 7 || memory > 8)
    throw UserError(fmt::format("MIG layout '{}': {} compute and {} memory slices, an A100 has 7 and 8", text, compute,
                                memory));
  return out;
}

double mig_slowdown(const MigProfile& slice, double solo_smact) {
  return std::max(1.0, solo_smact / slice.capacity);
}

}  // namespace colo::sim
