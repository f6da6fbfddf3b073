#pragma once
// What `colo run` leaves behind for one attempt of a Slurm job, so the recovery agent learns the
// attempt's outcome and observed peak: <state_dir>/reports/<job>.<restart>.json, created by the
// job's user in a drop-box directory (mode 1733: anyone may add, nobody may list or replace
// another's file). The agent trusts a report only when its owner is the job's user.
// Job ids are predictable, so another user may have created that name first; a script may also
// run several `colo run` steps in one attempt, at once or one after another. Each step therefore
// leaves its own file (the plain name when free, else <job>.<restart>.<random>.json) and the
// reader merges every one of them the job's user owns. The agent removes reports of jobs Slurm
// no longer lists.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
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
// Creates this step's report exclusively, complete or not at all (written aside, then linked
// into place; a taken name gets a random suffix). Returns its path; throws colo::UserError.
std::string write_attempt_report(const std::string& state_dir, const AttemptReport& r);
// One report for two steps of an attempt: the worse outcome (oom > failed > ok) with its exit
// code and OOM line, the larger peak.
AttemptReport merge_attempt_reports(const AttemptReport& earlier, const AttemptReport& later);
// At most this many suffixed files of the job's own user are read for one attempt (what one user
// can make the agent read); other users' files are skipped unopened and do not count.
inline constexpr std::size_t kMaxReportsPerAttempt = 4096;
// The merge of every report of (job, restart) that parses and is owned by `owner_uid`, oldest
// first; nullopt when there is none (`why`, when given, says what the plain name held).
std::optional<AttemptReport> read_attempt_report(const std::string& state_dir, std::uint64_t job_id, int restart,
                                                 std::int64_t owner_uid, std::string* why = nullptr);
// Removes the reports (and anything else named <job>.…) of jobs not in `listed` whose inode last
// changed at least `min_age_s` seconds ago (ctime, which a user cannot set back): Slurm has
// forgotten those jobs, and a name squatted for a future job id is gone before it is used.
// Returns how many were removed. Directories and unparsable names are left alone.
int remove_stale_reports(const std::string& state_dir, const std::set<std::uint64_t>& listed, std::int64_t min_age_s);

}  // namespace colo::slurm
