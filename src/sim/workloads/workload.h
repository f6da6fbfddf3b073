#pragma once
// One row of the workload catalog (Table 6.2 of the dissertation, data/carma/workloads.csv):
// what a training job truly needs on an A100, plus the estimates the prototype used for it.
#include <optional>
#include <string>

#include "core/units.h"

namespace colo::sim {

struct Workload {
  std::string name;      // key used by traces
  std::string model;     // e.g. resnet50
  std::string dataset;   // e.g. imagenet
  int batch_size = 0;
  int gpus = 1;          // data-parallel over this many GPUs of one server
  double epochs = 0;
  double epoch_minutes = 0;
  // True peak memory per GPU (nvidia-smi, MiB). For 2-GPU jobs the published figure does not
  // say whether it is per GPU or the sum; colo treats it as per GPU (the conservative reading:
  // each of the two GPUs must hold it).
  MiB true_mib = 0;
  Seconds solo_seconds = 0;  // epochs × epoch_minutes × 60, alone on its GPU(s)
  double smact = 0;          // SM activity (0..1) when running alone, see sm_activity.h
  std::string smact_class;   // the workload class the SM activity came from
  // Share of wall time it has GPU work queued when alone (NVML utilisation; `colo bench
  // collocation` measures it): what it takes from the GPU under streams. nullopt (no `busy`
  // column or an empty cell): the streams model's default for a training loop.
  std::optional<double> busy;
  // The prototype's estimates (MiB per GPU); nullopt where the CSV cell is empty.
  std::optional<MiB> horus_mib, faketensor_mib, gpumemnet_mib;
  std::string summary;    // model summary file name (../summaries/…)
  std::string source;     // "table6.2" or "no-runtime-published"
  std::string optimizer;
  std::optional<int> seq_len;
  // Set when a documented assumption (workload_assumptions.h) filled a missing published value.
  bool assumed_runtime = false;
  bool assumed_memory = false;
};

}  // namespace colo::sim
