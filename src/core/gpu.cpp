#include "core/gpu.h"

namespace colo {

std::string_view to_string(SharingMode m) {
  switch (m) {
    case SharingMode::Plain: return "plain";
    case SharingMode::Mps: return "mps";
    case SharingMode::MigInstance: return "mig";
  }
  return "plain";
}

}  // namespace colo
