#include "slurm/escalation.h"

#include <algorithm>

namespace colo::slurm {

std::optional<TresRequest> escalate(const TresRequest& current, std::optional<MiB> observed_peak_mib,
                                    const SiteSettings& site) {
  if (current.whole_gpus > 0) return std::nullopt;
  const MiB had = static_cast<MiB>(std::max(current.shards, 1)) * site.shard_mib;
  const MiB next = std::max(had, observed_peak_mib.value_or(0)) + site.step_mib;
  TresRequest r;
  r.shards = shards_for(next, 0.0, site.shard_mib);
  if (r.shards > site.shards_per_gpu) {
    r.shards = 0;
    r.whole_gpus = 1;
  }
  return r;
}

}  // namespace colo::slurm
