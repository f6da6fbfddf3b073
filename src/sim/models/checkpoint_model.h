#pragma once
// What a checkpoint costs a job under time slots (core/time_slots.h): writing it when asked
// (the job still holds its GPU, its progress after the request is not in the checkpoint) and
// reading it back on the next launch (solo seconds of work added to what is left). Values and
// sources: the model file's [checkpoint] section (models/sim/a100-thesis.toml).
namespace colo::sim {

struct CheckpointParams {
  double save_s = 30;     // request → checkpoint written and the process gone
  double restore_s = 60;  // launch → training resumes where the checkpoint left it
};

}  // namespace colo::sim
