#pragma once
// What `colo run` leaves behind for one attempt of a Slurm job, so the recovery agent learns the
// attempt's outcome and observed peak: <state_dir>/reports/<job>.<restart>.json, created by the
// job's user in a drop-box directory (mode 1733: anyone may add, nobody may list or replace
// another's file). The agent trusts a report only when its owner is the job's user.
#include <cstdint>
#include <optional>
#include <string>

#include "core/units.h"

namespace colo::slurm {

struct AttemptReport {
  std::uint64_t job_id = 0;
  int restart = 0;            // SLURM_RESTART_COUNT of the attempt (0 = first)
  std::string outcome;        // "ok", "oom" or "failed"
  int exit_code = 0;          // what colo run exited with
  std::optional<MiB> peak_mib;  // the job's processes' largest per-GPU memory; none without NVML
  std::string oom_line;       // the OOM message seen (outcome oom)
  std::string gpus;           // the GPUs it ran on (SLURM_JOB_GPUS)
  std::string tres;           // SLURM_SHARDS_ON_NODE shards or "gpu"
};

std::string reports_dir(const std::string& state_dir);
std::string report_path(const std::string& state_dir, std::uint64_t job_id, int restart);
// Creates the file exclusively (an existing one is never overwritten); throws colo::UserError.
void write_attempt_report(const std::string& state_dir, const AttemptReport& r);
// The report of (job, restart) when it exists, parses, and is owned by `owner_uid`; nullopt
// otherwise (`why`, when given, says which).
std::optional<AttemptReport> read_attempt_report(const std::string& state_dir, std::uint64_t job_id, int restart,
                                                 std::int64_t owner_uid, std::string* why = nullptr);

}  // namespace colo::slurm
