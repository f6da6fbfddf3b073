#pragma once
// How colod asks a job to checkpoint at the end of its time slot (core/time_slots.h), for jobs
// submitted with --checkpoint. The job learns it two ways, whichever suits its framework:
//   • a POSIX signal ([slots] signal, SIGUSR1 by default; named in COLO_CHECKPOINT_SIGNAL),
//     sent by the shim to the job's process group;
//   • a file (COLO_CHECKPOINT_FILE) that appears, holding "stop_at=<unix time>": the moment
//     colod stops the job if it is still running.
// The job then saves its state and exits with COLO_CHECKPOINT_EXIT (75, EX_TEMPFAIL: "try
// again later"); colod queues it again and its next launch resumes from what it saved.
// docs/DAEMON.md "Time slots" has a PyTorch example.
#include <optional>
#include <string>
#include <string_view>

#include "core/units.h"

namespace colo::daemon {

constexpr int kCheckpointExitCode = 75;

// "USR1", "SIGUSR1", "USR2", "SIGUSR2", "INT", "SIGINT", "HUP", "SIGHUP"; nullopt otherwise.
std::optional<int> checkpoint_signal_from_name(std::string_view name);
std::string checkpoint_signal_name(int signo);  // "USR1"

// The request files live in <state_dir>/checkpoint: owned by colod, 0711 (users reach their
// job's file by name, nobody lists the directory), files 0644, written atomically.
class CheckpointRequests {
 public:
  explicit CheckpointRequests(std::string dir) : dir_(std::move(dir)) {}
  void prepare() const;  // creates the directory with its mode
  std::string path(JobId job) const;
  void write(JobId job, double stop_at) const;  // throws std::runtime_error
  void remove(JobId job) const;                 // no error if absent

 private:
  std::string dir_;
};

}  // namespace colo::daemon
