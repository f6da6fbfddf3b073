#include "estimate/trace/script_command.h"

#include <algorithm>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "core/error.h"
#include "core/one_line.h"

namespace colo::estimate {

namespace {


bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// torchrun's options (torch/distributed/run.py), '-' and '_' spellings alike: those taking a value.
bool torchrun_takes_value(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  static const std::vector<std::string> with_value = {
      "--nnodes", "--nproc-per-node", "--rdzv-backend", "--rdzv-endpoint", "--rdzv-id", "--rdzv-conf",
      "--max-restarts", "--monitor-interval", "--start-method", "--role", "--node-rank", "--master-addr",
      "--master-port", "--local-addr", "--log-dir", "-r", "--redirects", "-t", "--tee", "--local-ranks-filter",
      "--logs-specs", "--event-log-handler", "--run-path"};
  return std::find(with_value.begin(), with_value.end(), name) != with_value.end();
}

std::int64_t nproc_per_node(const std::string& v) {
  if (v == "gpu" || v == "auto") return ScriptCommand::kOnePerGpu;
  if (v == "cpu") throw UserError("--probe-script: torchrun --nproc-per-node cpu trains on the CPU; nothing to estimate");
  std::int64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9' || (n = n * 10 + (c - '0')) > 256)
      throw UserError(fmt::format("--probe-script: torchrun --nproc-per-node '{}': expected 1..256, gpu or auto", one_line(v)));
  }
  if (v.empty() || n == 0)
    throw UserError(fmt::format("--probe-script: torchrun --nproc-per-node '{}': expected 1..256, gpu or auto", one_line(v)));
  return n;
}

// torchrun's options, then the script: `torchrun --nproc-per-node 4 train.py …` (argv[i] is the
// first word after the launcher).
ScriptCommand torchrun_script(const std::vector<std::string>& argv, std::size_t i) {
  ScriptCommand c;
  c.torchrun = 1;  // torchrun's default: one process
  for (; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.empty() || a[0] != '-') break;
    const std::size_t eq = a.find('=');
    std::string name = a.substr(0, eq), value;
    std::string canon = name;
    std::replace(canon.begin(), canon.end(), '_', '-');
    if (canon == "--standalone") continue;
    if (canon == "--no-python" || canon == "-m" || canon == "--module")
      throw UserError(fmt::format("--probe-script: torchrun {} runs no Python script file; give --probe MODEL instead",
                                  one_line(name)));
    if (!torchrun_takes_value(name))
      throw UserError(fmt::format("--probe-script: torchrun option '{}' is not one the probe knows", one_line(name)));
    if (eq != std::string::npos) {
      value = a.substr(eq + 1);
    } else {
      if (++i >= argv.size()) throw UserError(fmt::format("--probe-script: torchrun {} needs a value", one_line(name)));
      value = argv[i];
    }
    if (canon == "--nproc-per-node") c.torchrun = nproc_per_node(value);
    if (canon == "--nnodes" && value != "1" && value != "1:1")
      throw UserError(fmt::format("--probe-script: torchrun --nnodes {}: colo runs a job on one server", one_line(value)));
  }
  if (i >= argv.size()) throw UserError("--probe-script: torchrun names no script");
  c.script = argv[i];
  c.args.assign(argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
  return c;
}

}  // namespace

bool is_python_interpreter(const std::string& word) {
  static const std::regex py(R"(python(3(\.\d+)?)?)");
  return std::regex_match(std::filesystem::path(word).filename().string(), py);
}

ScriptCommand script_of_command(const std::vector<std::string>& argv) {
  if (argv.empty()) throw UserError("--probe-script: the job has no command");
  std::size_t i = 0;
  if (std::filesystem::path(argv[0]).filename() == "env") {  // env [VAR=value …] python3 …
    for (i = 1; i < argv.size() && argv[i].find('=') != std::string::npos && argv[i][0] != '-'; ++i) {
    }
    if (i == argv.size()) throw UserError("--probe-script: `env` runs no command");
  }
  if (std::filesystem::path(argv[i]).filename() == "torchrun") {
    // torchrun's processes run the Python it was installed with; `python3` in the job's PATH is
    // that one where the job's environment is active (a virtual environment's bin first).
    ScriptCommand t = torchrun_script(argv, i + 1);
    t.interpreter = "python3";
    return t;
  }
  ScriptCommand c;
  if (ends_with(argv[i], ".py")) {
    c.script = argv[i];
    c.args.assign(argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
    return c;
  }
  if (!is_python_interpreter(argv[i]))
    throw UserError(fmt::format("--probe-script: the command runs '{}', not a Python training script "
                                "(expected `python3 train.py …` or `./train.py …`)", one_line(argv[i])));
  const std::string& interpreter = argv[i];
  // The interpreter's own options come before the script; those taking a value take the next word.
  for (++i; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "-m" && i + 1 < argv.size() && argv[i + 1] == "torch.distributed.run") {
      ScriptCommand t = torchrun_script(argv, i + 2);
      t.interpreter = interpreter;
      return t;
    }
    if (a == "-m" && i + 1 < argv.size() && argv[i + 1] == "torch.distributed.launch")
      throw UserError("--probe-script: torch.distributed.launch is deprecated and passes its own arguments to the "
                      "script; run the job with torchrun (or python3 -m torch.distributed.run)");
    if (a == "-m" || a == "-c")
      throw UserError(fmt::format("--probe-script: `python {} …` runs no script file; give --probe MODEL instead", a));
    if (a == "-W" || a == "-X" || a == "--check-hash-based-pycs") {
      ++i;
      continue;
    }
    if (a == "-" || a.empty()) throw UserError("--probe-script: the script comes from stdin, not a file");
    if (a[0] != '-') break;
    if (a.rfind("-m", 0) == 0 || a.rfind("-c", 0) == 0)
      throw UserError(fmt::format("--probe-script: `python {}` runs no script file; give --probe MODEL instead", one_line(a)));
  }
  if (i >= argv.size()) throw UserError("--probe-script: the Python command names no script");
  c.interpreter = interpreter;
  c.script = argv[i];
  c.args.assign(argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
  return c;
}

}  // namespace colo::estimate
