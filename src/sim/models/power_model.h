#pragma once
// GPU board power. Three levels (defaults: the thesis' A100s, docs/SIMULATOR.md "Power"):
//   no job progressing:   idle_watts   (≈ 55 W: memory powered, clocks down)
//   jobs progressing:     busy_watts + (max_watts − busy_watts) × work
// where `work` = Σ over co-runners of solo SMACT × progress rate (≤ 1): the SM work actually
// done per second. Stalls caused by interference slow jobs down without adding work, so they
// cost time (and the busy floor) but no dynamic power; a job's dynamic energy is the same
// wherever it runs, and what collocation saves is the floor it no longer pays alone and the
// idle time of a shorter makespan.
namespace colo::sim {

struct PowerParams {
  double idle_watts = 55.0;
  double busy_watts = 61.5;  // idle + the 6.5 W floor measured under collocation on an H200 (docs/GPU-VALIDATION.md §5)
  double max_watts = 299.8;  // at full SM work: fitted to thesis Table 6.6's exclusive run (scripts/fit-power.py)
};

inline double gpu_watts(const PowerParams& p, bool busy, double work) {
  return busy ? p.busy_watts + (p.max_watts - p.busy_watts) * work : p.idle_watts;
}

// Joules over `seconds` for a GPU busy for `busy_seconds` of them that did `work_seconds` of work.
inline double gpu_joules(const PowerParams& p, double seconds, double busy_seconds, double work_seconds) {
  return p.idle_watts * (seconds - busy_seconds) + p.busy_watts * busy_seconds +
         (p.max_watts - p.busy_watts) * work_seconds;
}

}  // namespace colo::sim
