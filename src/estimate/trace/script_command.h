#pragma once
// The training script a job's command runs, for `colo submit --probe-script -- python3 train.py …`:
// the probe then runs that script with the same arguments. Recognised commands: a Python
// interpreter (python, python3, python3.11, …, optionally through `env`) with its own options
// before the script, or a `*.py` file run directly.
#include <string>
#include <vector>

namespace colo::estimate {

struct ScriptCommand {
  std::string script;
  std::vector<std::string> args;
};

// Throws colo::UserError naming why the command is not a script the probe can run
// (`python -m module`, `python -c code`, not Python at all).
ScriptCommand script_of_command(const std::vector<std::string>& argv);

}  // namespace colo::estimate
