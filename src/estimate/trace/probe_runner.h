#pragma once
// Runs the CPU-only probe (python/colo_probe) for a job and reads its trace. The probe is a child
// process (its own process group) with a wall-clock timeout and an address-space limit; the caller
// decides whose identity it runs under (colod drops to the submitting user before calling
// run_probe_as, never root). Python: the interpreter the probed job's command names, else
// $COLO_PYTHON, else /usr/bin/python3 (Debian's, which has python3-torch), else python3 on PATH.
// Package: $COLO_PROBE_PATH, else <source>/python (first on PYTHONPATH).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "estimate/trace/probe_trace.h"

namespace colo::estimate {

struct ProbeRequest {
  std::string model;            // torchvision:NAME or path/to/file.py:function
  std::string input;            // "3x224x224" ("" = the model's default / the file's input_fn)
  std::string dtype;            // input dtype ("" = float32)
  std::int64_t num_classes = 0; // 0 = the model's default
  std::int64_t batch = 0;
  std::string optimizer = "adam";
  std::string amp = "none";     // none, fp16, bf16
  bool checkpointing = false;
  bool set_to_none = true;
  std::string foreach = "auto"; // auto, on, off
  std::int64_t data_parallel = 1;  // torch.nn.DataParallel over this many GPUs (the trace is GPU 0's)
  // Script mode (model empty): the user's unmodified training script and its own arguments, run
  // with its CUDA device redirected to the probe (python/colo_probe/script.py). The script picks
  // its batch, optimizer and precision; data_parallel is the GPUs it sees.
  std::string script;
  std::vector<std::string> script_args;
  // Script mode: the script runs under torchrun with this many processes on the node (0 = not under
  // torchrun); the probe is rank 0 (python/colo_probe/distributed.py). At most data_parallel.
  std::int64_t torchrun = 0;
  // Script mode: the Python interpreter the job's command names ("python3", "/opt/venv/bin/python"),
  // looked up as the job's own command would be (the PATH of ProbeIdentity::env): the probe runs under it, so
  // the script sees the job's PyTorch and packages. "" = probe_python().
  std::string python;
  // PYTORCH_CUDA_ALLOC_CONF for the probe ("" = whatever its environment has): the job's own, as
  // the client read it from the job's environment.
  std::string alloc_conf;
  // PyTorch's default allocator settings whatever the environment has (the measured data sets'
  // workloads, estimated by `estimate eval` and the simulator, ran with the defaults).
  bool default_alloc_conf = false;

  // What is probed, for messages: the model spec or the script's path.
  std::string subject() const { return script.empty() ? model : script; }

  // The probe's own command-line arguments (after `python3 -m colo_probe`). Throws colo::UserError
  // for a value the probe would refuse (checked here so the error names the colo flag).
  std::vector<std::string> arguments() const;
  nlohmann::json to_json() const;
  static ProbeRequest from_json(const nlohmann::json& j, const std::string& where);
};

struct ProbeLimits {
  double timeout_seconds = 300;
  std::uint64_t address_space_bytes = 32ull << 30;  // RLIMIT_AS of the probe
  std::string workdir;                              // "" = the current directory
  std::string keep_trace_as;  // also copy the trace file here ("" = none; estimate eval --keep-traces)
};

// Who the probe runs as. colod runs it as the submitting user: supplementary groups, gid and uid
// are dropped before exec, then the probe is tied to colod's life (PR_SET_PDEATHSIG), so a
// killed daemon leaves no probe behind and a restarted one starts it again.
// With an identity the probe gets the job's environment, not its parent's.
struct ProbeIdentity {
  std::int64_t uid = -1, gid = -1;
  std::string user, home;
  int umask = 022;  // the submitter's file-creation mask (colod's own is 077): files the script makes
  // The environment the job's command will get (colod: Daemon::job_base_environment), so that the
  // probe finds the interpreter and modules the job would (PATH, PYTHONPATH) and the script reads
  // its own settings (PL_TRAINER_*, TORCH_HOME, WANDB_MODE, ...). The probe's own entries replace
  // the job's: PYTHONPATH (the probe package first, then the job's), CUDA_VISIBLE_DEVICES (empty),
  // the allocator settings when the request names them. Missing PATH = /usr/local/bin:/usr/bin:/bin;
  // missing HOME, USER, LOGNAME, LANG = the identity's.
  std::vector<std::pair<std::string, std::string>> env;
};

// A started probe (spawn_probe): its pid, which is also its process group.
struct ProbeSpawn {
  const ProbeIdentity* identity = nullptr;  // nullptr = as the caller
  int err_fd = -1;                          // the probe's stderr (-1 = /dev/null)
  int out_fd = -1;                          // >= 0: the trace goes to this descriptor (as /dev/fd/3)
  std::string out_path;                     // when out_fd < 0: the trace file
  std::string interpreter;                  // the Python to run, whatever the request names ("" = see ProbeRequest::python)
  // A cgroup's cgroup.procs the probe joins first ("" = none): what it starts, even a process that
  // leaves its process group (setsid), is then in that cgroup and dies with it.
  std::string cgroup_procs;
};
int spawn_probe(const ProbeRequest& req, const ProbeLimits& limits, const ProbeSpawn& how);

// The one-line reason a probe failed, from its wait status and stderr; "" when it succeeded.
std::string probe_failure(const ProbeRequest& req, int wait_status, const std::string& err, const ProbeLimits& limits);

struct ProbeRun {
  ProbeTrace trace;
  double seconds = 0;           // wall clock, including Python and PyTorch start-up
};

// Runs the probe as the caller and waits. Throws colo::UserError with the probe's one-line reason (bad model, PyTorch missing, timeout,
// killed, malformed trace).
ProbeRun run_probe(const ProbeRequest& req, const ProbeLimits& limits = {});

std::string probe_python();
std::string probe_package_dir();

}  // namespace colo::estimate
