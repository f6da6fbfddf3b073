#include "core/recovery.h"

#include <algorithm>

namespace colo {

std::string_view to_string(RecoveryMode m) { return m == RecoveryMode::Strict ? "strict" : "loose"; }

std::optional<RecoveryMode> recovery_mode_from_string(std::string_view s) {
  if (s == "strict") return RecoveryMode::Strict;
  if (s == "loose") return RecoveryMode::Loose;
  return std::nullopt;
}

void plan_recovery(Job& job, const RecoveryConfig& cfg, MiB attempted_mib,
                   std::optional<MiB> observed_peak_mib, MiB largest_gpu_mib,
                   std::optional<MiB> crashed_alone_on_mib) {
  transition(job, JobState::Recovering);
  if (cfg.mode == RecoveryMode::Strict || job.recovery_alone) {
    job.recovery_alone = true;
    // A larger GPU, where there is one; never smaller than what an earlier crash alone asked
    // (a multi-GPU job placed on a large and a small instance would otherwise fall back and forth).
    const std::optional<MiB> earlier = job.recovery_need_mib;
    job.recovery_need_mib.reset();
    if (crashed_alone_on_mib) job.recovery_need_mib = std::max(*crashed_alone_on_mib + 1, earlier.value_or(0));
    return;
  }
  const MiB last = std::max({attempted_mib, observed_peak_mib.value_or(0), crashed_alone_on_mib.value_or(0),
                             job.recovery_need_mib.value_or(0), job.need.mib.value_or(0)});
  const MiB next = last + cfg.step_mib;
  if (next >= largest_gpu_mib) {
    job.recovery_alone = true;
    job.recovery_need_mib.reset();
  } else {
    job.recovery_need_mib = next;
  }
}

}  // namespace colo
