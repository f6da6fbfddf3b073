#pragma once
// MIG (A100 40 GB): the GPU split into instances with fixed compute (sevenths of the SMs) and
// memory (eighths), each running one job in isolation. A job alone on an instance runs at most
// as fast as the instance lets it: slowdown = max(1, solo SMACT / capacity), where capacity is
// the share of the whole GPU's throughput the profile delivers to a training job. Capacities
// (the model file's [mig], docs/SIMULATOR.md "Streams, MPS and MIG on one GPU"):
//   7g.40gb 1.0 (thesis §4.3.2: no overhead against the whole GPU), 3g.20gb fitted to Table 4.2
//   (ResNet152, SMACT 0.82, +33 %), 1g.5gb fitted to §4.3.2 (7-way small jobs 2–2.5×), 2g and 4g
//   interpolated in compute slices (assumption).
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"

namespace colo::sim {

struct MigParams {
  double capacity_1g = 0.098;
  double capacity_2g = 0.356;
  double capacity_3g = 0.615;
  double capacity_4g = 0.711;
  double capacity_7g = 1.0;
};

struct MigProfile {
  std::string name;       // "3g.20gb"
  int compute_slices = 0;  // of 7
  int memory_slices = 0;   // of 8
  MiB memory_mib = 0;      // usable: memory_slices × 4864 MiB (assumption: 95 % of 5 GiB)
  double capacity = 1.0;
};

// The A100 40 GB profiles with the given capacities.
std::vector<MigProfile> mig_profiles(const MigParams& p = {});
// "3g.20gb,4g.20gb" → the instances of one GPU. Throws colo::UserError naming the problem
// (unknown profile, more than 7 compute or 8 memory slices, empty).
std::vector<MigProfile> parse_mig_layout(std::string_view text, const MigParams& p = {});
// A job alone on the instance.
double mig_slowdown(const MigProfile& slice, double solo_smact);

}  // namespace colo::sim
