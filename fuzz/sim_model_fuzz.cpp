// The simulator's model files (`colo sim --model FILE`, src/sim/models/sim_model.cpp): every
// parameter with its source, written by hand or by `colo bench collocation`. Any bytes must end in
// a UserError or a model; a model that reads must write back (write_sim_model) to a file that
// reads back to the same text, so a site's fitted model survives its own round trip.
#include <cstdio>
#include <cstdlib>

#include "fuzz_common.h"
#include "sim/models/sim_model.h"

namespace {

void parse_sim_model(const std::uint8_t* data, std::size_t size) {
  using colo::sim::load_sim_model;
  using colo::sim::write_sim_model;
  const colo::sim::SimModel m = load_sim_model(colo::fuzz::scratch_file(colo::fuzz::as_text(data, size), "model.toml"));
  const std::string once = write_sim_model(m, "round trip");
  const std::string twice = write_sim_model(load_sim_model(colo::fuzz::scratch_file(once, "model-again.toml")), "round trip");
  if (once != twice) {
    std::fprintf(stderr, "colo fuzz [sim_model]: a written model reads back different:\n%s\n---\n%s\n", once.c_str(),
                 twice.c_str());
    std::abort();
  }
}

}  // namespace

COLO_FUZZ_TARGET(sim_model) {
  COLO_FUZZ_EXPECT_USER_ERROR("sim_model", parse_sim_model(data, size));
  return 0;
}
