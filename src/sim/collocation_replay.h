#pragma once
// The thesis' chapter-4 experiment on the model: training jobs started together on one GPU,
// shared by streams (time slicing), MPS or MIG instances, each running until its own work is
// done. Replays it with the sharing models (their slowdowns are recomputed whenever a job
// ends) so the model can be set beside the thesis' measurements, and a site's own pairs.
#include <string>
#include <vector>

#include "core/units.h"
#include "sim/models/mig_model.h"
#include "sim/models/sharing_model.h"

namespace colo::sim {

struct CollocatedJob {
  std::string name;
  Seconds solo_s = 0;   // alone on the whole GPU
  double smact = 0;     // solo SM activity, 0..1
  double busy = -1;     // share of wall time with GPU work queued (streams); < 0: the model's default
  MiB mem_mib = 0;      // what it needs (checked against MIG instances; 0 = not checked)
};

struct CollocatedOutcome {
  std::string name;
  Seconds finish_s = 0;
  double slowdown = 1;    // finish / solo
  std::string instance;   // MIG: the profile it ran on
};

struct CollocationResult {
  std::vector<CollocatedOutcome> jobs;
  Seconds makespan_s = 0;  // the last job's finish
  Seconds serial_s = 0;    // the jobs one after another, alone
};

// Streams or MPS: every job on the whole GPU at once.
CollocationResult replay_shared(const std::vector<CollocatedJob>& jobs, const SharingModel& model);
// MIG: job k on instance k of `layout`; throws colo::UserError when there are more jobs than
// instances or a job's memory exceeds its instance's.
CollocationResult replay_mig(const std::vector<CollocatedJob>& jobs, const std::vector<MigProfile>& layout);

}  // namespace colo::sim
