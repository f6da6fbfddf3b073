// What the recovery agent reads from Slurm (src/slurm/slurm_control.cpp, job_comment.cpp,
// shard_plan.cpp): `squeue --json`, and in each job the comment (user-written text around colo's
// record) and tres_per_node.
#include "fuzz_common.h"
#include "slurm/job_comment.h"
#include "slurm/shard_plan.h"
#include "slurm/slurm_control.h"

namespace {

void read_jobs(const std::string& text) {
  for (const auto& j : colo::slurm::parse_squeue_json(text)) {
    (void)colo::slurm::parse_comment(j.comment);
    if (const auto t = colo::slurm::parse_tres_per_node(j.tres_per_node))
      (void)colo::slurm::parse_tres_per_node(colo::slurm::to_tres_per_node(*t));
  }
}

}  // namespace

COLO_FUZZ_TARGET(squeue_json) {
  COLO_FUZZ_EXPECT_USER_ERROR("squeue_json", read_jobs(std::string(colo::fuzz::as_text(data, size))));
  return 0;
}
