#pragma once
// One probe colod runs for a job submitted with `colo submit --probe` (the job waits in the
// estimating state). The probe runs the user's model code, so it runs as the submitter, in the
// job's working directory, with a clean environment, a wall-clock deadline and an address-space
// limit, and dies with colod (a restarted colod starts it again); where the host allows, in a
// cgroup leaf of its own, so that what it starts dies with it even outside its process group. Its trace and stderr go to
// files in the job's directory that colod created and holds open: the probe is handed
// descriptors, and colod reads back through them, never through a path the user could swap.
// Reading and estimating the trace (up to 64 MiB: seconds, and hundreds of MiB parsed) run on a
// thread of their own, so colod's event loop answers and schedules meanwhile.
#include <functional>
#include <future>
#include <optional>
#include <string>

#include "estimate/estimator.h"
#include "estimate/trace/probe_runner.h"
#include "estimate/trace/probe_trace.h"

namespace colo::daemon {

struct ProbeSettings {
  double timeout_seconds = 300;
  std::uint64_t address_space_bytes = 32ull << 30;
  std::string interpreter;  // "" = the job's own (ProbeRequest::python), else colo's
};

class JobProbe {
 public:
  // Starts the probe. Throws colo::UserError when it cannot be started (no Python, no package,
  // the files cannot be created).
  // `cgroup_name`: the probe's cgroup leaf where the host allows one (as a job's: job_cgroup.h),
  // recorded in dir/probe.cgroup; the leaf an earlier run recorded there (colod was killed
  // meanwhile) is emptied and removed first.
  JobProbe(const estimate::ProbeRequest& req, const estimate::ProbeIdentity& who, const std::string& workdir,
           const std::string& dir, const std::string& cgroup_name, const ProbeSettings& settings, double now_mono);
  ~JobProbe();
  JobProbe(const JobProbe&) = delete;
  JobProbe& operator=(const JobProbe&) = delete;

  int pid() const { return pid_; }
  bool reaped() const { return reaped_; }  // finish() was called: pid() may be another process's now
  // Past the deadline, or its trace or stderr file past its cap (what a probe may leave in the
  // state directory): the probe's process group is killed (the exit is collected as usual) and
  // the reason is returned (once; empty otherwise).
  std::string kill_if_past_limits(double now_mono);
  void kill();  // nothing once reaped (finish()): its pid may be another process's by then

  struct Outcome {
    std::optional<estimate::Estimate> estimate;  // set when the probe succeeded and its trace was estimated
    std::string failure;                          // one line, when not
    double seconds = 0;
  };
  // What the job's trace is estimated with (it may throw); called on finish()'s thread.
  using Estimator = std::function<estimate::Estimate(const estimate::ProbeTrace&)>;
  // The probe exited with `wait_status`: starts reading and estimating its trace.
  void finish(int wait_status, double now_mono, Estimator estimator);
  // finish()'s outcome once it is there (once); nullopt before.
  std::optional<Outcome> outcome();

 private:
  estimate::ProbeRequest req_;
  ProbeSettings settings_;
  int pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  std::optional<std::string> cgroup_;  // the leaf, where there is one
  std::string record_;                 // dir/probe.cgroup: the leaf's path while it exists
  void drop_cgroup();                  // kills what is left in it and removes it
  double started_ = 0;
  std::string overrun_;  // why kill_if_past_limits killed it; empty while it has not
  bool reaped_ = false;
  double seconds_ = 0;            // the probe's run, for finish()'s outcome
  std::optional<Outcome> ready_;  // finish() decided without reading the trace
  std::future<Outcome> work_;     // else: reading and estimating it
};

}  // namespace colo::daemon
