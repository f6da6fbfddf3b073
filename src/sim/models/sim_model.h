#pragma once
// The simulator's model parameters in one place, read from a model file (TOML,
// models/sim/a100-thesis.toml is the default): MPS and streams interference, board power, memory
// ramp and OOM detection times, and the solo SM activity per workload class. Every parameter in
// the file carries its value and its source ("thesis …", "data sheet …", "assumption: …"); a
// file without a source for a parameter is refused. `colo sim --model FILE` points at another.
#include <map>
#include <string>

#include "sim/models/checkpoint_model.h"
#include "sim/models/mig_model.h"
#include "sim/models/mps_model.h"
#include "sim/models/power_model.h"
#include "sim/models/sm_activity.h"
#include "sim/models/streams_model.h"

namespace colo::sim {

struct SimModel {
  MpsParams mps;
  StreamsParams streams;
  PowerParams power;
  double ramp_s = 30;
  double oom_detect_s = 10;
  CheckpointParams checkpoint;
  MigParams mig;
  SmActivityTable smact = default_sm_activity_table();
  std::map<std::string, std::string> sources;  // "mps.interference" -> its source
};

// Reads and checks a model file; throws colo::UserError "FILE:LINE: what" (unknown or missing
// parameters, a value out of range, a missing source).
SimModel load_sim_model(const std::string& path);
// The model as a model file that load_sim_model reads back equal: every parameter with its
// value and its source (each must have one: std::logic_error otherwise); `comment` lines first,
// as TOML comments. For `colo bench collocation`, which writes a site's fitted model.
std::string write_sim_model(SimModel m, const std::string& comment);
// models/sim/a100-thesis.toml as found beside the binary or in the source tree.
std::string default_sim_model_path();

}  // namespace colo::sim
