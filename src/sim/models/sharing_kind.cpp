#include "sim/models/sharing_model.h"

namespace colo::sim {

std::string_view to_string(SharingKind k) { return k == SharingKind::Mps ? "mps" : "streams"; }

std::optional<SharingKind> sharing_kind_from_string(std::string_view s) {
  if (s == "mps") return SharingKind::Mps;
  if (s == "streams") return SharingKind::Streams;
  return std::nullopt;
}

}  // namespace colo::sim
