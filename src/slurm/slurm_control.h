#pragma once
// The recovery agent's view of Slurm: the jobs (squeue --json) and the three changes it makes
// (scontrol update / release). The real one runs Slurm's own commands (SLURM_CONF and PATH
// as inherited), so it works with any controller the site's clients reach.
#include <cstdint>
#include <string>
#include <vector>

namespace colo::slurm {

struct SlurmJob {
  std::uint64_t job_id = 0;
  std::int64_t user_id = -1;
  std::string state;         // "PENDING", "RUNNING", "SPECIAL_EXIT", "COMPLETED", …
  std::string state_reason;  // "JobHeldUser", …
  int restart_cnt = 0;
  int exit_code = 0;         // the batch script's exit status (0–255)
  std::string tres_per_node; // "gres:shard:12"
  std::string comment;
};

class SlurmControl {
 public:
  virtual ~SlurmControl() = default;
  virtual std::vector<SlurmJob> jobs() = 0;
  // scontrol update jobid=J TresPerNode=T StartTime=now (without StartTime a requeued job waits
  // 120 s before it may start).
  virtual void set_request(std::uint64_t job, const std::string& tres) = 0;
  virtual void release(std::uint64_t job) = 0;
  virtual void set_admin_comment(std::uint64_t job, const std::string& text) = 0;
};

// Parses `squeue --json` output (Slurm 22.05's data_parser). Throws colo::UserError.
std::vector<SlurmJob> parse_squeue_json(const std::string& text);

class SlurmCommands : public SlurmControl {
 public:
  std::vector<SlurmJob> jobs() override;
  void set_request(std::uint64_t job, const std::string& tres) override;
  void release(std::uint64_t job) override;
  void set_admin_comment(std::uint64_t job, const std::string& text) override;
  // scontrol update NodeName=N Weight=W (node-weight.h). Throws colo::UserError.
  void set_node_weight(const std::string& node, int weight);
};

struct CommandResult {
  int status = 0;  // exit code, or 128 + signal
  std::string out, err;
};
// Runs argv (PATH lookup, no shell) and collects its output. Throws colo::UserError when it
// cannot be started.
CommandResult run_command(const std::vector<std::string>& argv);

}  // namespace colo::slurm
