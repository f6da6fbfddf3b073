#pragma once
// colo's record in a Slurm job's comment: "colo:mem_mib=12288,est=allocsim,fp=u1000-…" followed,
// after a blank, by whatever the user wrote. job_submit.lua sizes size-less requests from
// mem_mib; the recovery agent keys the history of observed peaks by fp.
#include <optional>
#include <string>

#include "core/units.h"

namespace colo::slurm {

struct JobComment {
  MiB mem_mib = 0;          // the estimate (before the margin); 0 = none
  std::string estimator;    // which estimator made it ("history", "allocsim", "user", …)
  std::string fingerprint;  // "u<uid>-<hex>": the same training run of the same user
};

std::string format_comment(const JobComment& c, const std::string& user_comment = "");
// nullopt when the comment carries no colo record (or a malformed one).
std::optional<JobComment> parse_comment(const std::string& comment);

}  // namespace colo::slurm
