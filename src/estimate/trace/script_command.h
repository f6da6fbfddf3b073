#pragma once
// The training script a job's command runs, for `colo submit --probe-script -- python3 train.py …`:
// the probe then runs that script with the same arguments. Recognised commands: a Python
// interpreter (python, python3, python3.11, …, optionally through `env`) with its own options
// before the script, a `*.py` file run directly, or torchrun (`torchrun …` or `python3 -m
// torch.distributed.run …`) with its options before the script, on one node.
#include <cstdint>
#include <string>
#include <vector>

namespace colo::estimate {

struct ScriptCommand {
  std::string script;
  std::vector<std::string> args;
  // Under torchrun: its --nproc-per-node (processes on the node); kOnePerGpu for "gpu" / "auto"
  // (one per GPU the job has); 0 when the command is not torchrun.
  std::int64_t torchrun = 0;
  static constexpr std::int64_t kOnePerGpu = -1;
  // The Python interpreter the command names, as written ("python3", "/opt/venv/bin/python3.11");
  // "python3" under torchrun's launcher (looked up in the job's PATH); "" for a `*.py` file run
  // directly.
  std::string interpreter;
};

// Whether `word` names a Python interpreter: python, python3 or python3.N, by path or not.
bool is_python_interpreter(const std::string& word);

// Throws colo::UserError naming why the command is not a script the probe can run
// (`python -m module`, `python -c code`, not Python at all, torchrun over several nodes or with
// an option it does not know).
ScriptCommand script_of_command(const std::vector<std::string>& argv);

}  // namespace colo::estimate
