#pragma once
// What a job that crashed out of memory asks for on its next attempt.
//  strict (thesis): the recovery queue is served first and the job runs alone on an idle GPU.
//  loose (thesis §7.2): the retry asks for (last attempt's memory + step) free, escalating by
//  one step per crash until the ask no longer fits a GPU, from then on an idle GPU.
#include <optional>
#include <string_view>

#include "core/job.h"

namespace colo {

enum class RecoveryMode { Strict, Loose };
std::string_view to_string(RecoveryMode m);
std::optional<RecoveryMode> recovery_mode_from_string(std::string_view s);

struct RecoveryConfig {
  RecoveryMode mode = RecoveryMode::Strict;
  MiB step_mib = 5 * kGiB;
  // A retry that runs alone lets others join once its peak memory has been observed (the
  // thesis' prototype let jobs join a recovered one once it ran): the driver then calls
  // Ledger::share with the observed peak + the policy's margin. Off: alone to the end.
  bool share_after_peak = false;
};

// Applies the recovery rule to a job that just crashed with OOM (state oom) and moves it to
// recovering. `attempted_mib` is what the crashed attempt was placed with (its need or its
// reservation), `observed_peak_mib` what the monitor saw it reach, `largest_gpu_mib` the
// largest GPU (or MIG slot) it could run on. `crashed_alone_on_mib`: the job had its GPU(s) to
// itself and still ran out of memory, so it needs more than that GPU's total (MIG instances differ
// in size): the retry asks for more than that, strict or loose, and the core places it only where
// that much exists (a larger instance), or on any idle GPU when none is larger.
void plan_recovery(Job& job, const RecoveryConfig& cfg, MiB attempted_mib,
                   std::optional<MiB> observed_peak_mib, MiB largest_gpu_mib,
                   std::optional<MiB> crashed_alone_on_mib = std::nullopt);

}  // namespace colo
