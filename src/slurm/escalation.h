#pragma once
// The loose recovery rule (thesis §7.2) in shards: a job that ran out of memory asks next time
// for what it had (or the peak it was seen at, if larger) plus one step; once that is more than
// one GPU holds, for a whole GPU. A job that ran out of memory on a whole GPU cannot be helped
// by a larger share.
#include <optional>

#include "core/units.h"
#include "slurm/shard_plan.h"
#include "slurm/site_settings.h"

namespace colo::slurm {

// nullopt when `current` was already a whole GPU (nothing larger to give).
std::optional<TresRequest> escalate(const TresRequest& current, std::optional<MiB> observed_peak_mib,
                                    const SiteSettings& site);

}  // namespace colo::slurm
