#include "sim/simulator.h"

#include "sim/engine/engine.h"

namespace colo::sim {

SimResult simulate(const SimConfig& cfg, std::span<const SimJobSpec> jobs) {
  detail::Engine engine(cfg, jobs);
  return engine.run();
}

}  // namespace colo::sim
