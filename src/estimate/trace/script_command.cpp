#include "estimate/trace/script_command.h"

#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "core/error.h"
#include "core/one_line.h"

namespace colo::estimate {

namespace {

bool is_python(const std::string& word) {
  static const std::regex py(R"(python(3(\.\d+)?)?)");
  return std::regex_match(std::filesystem::path(word).filename().string(), py);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

ScriptCommand script_of_command(const std::vector<std::string>& argv) {
  if (argv.empty()) throw UserError("--probe-script: the job has no command");
  std::size_t i = 0;
  if (std::filesystem::path(argv[0]).filename() == "env") {  // env [VAR=value …] python3 …
    for (i = 1; i < argv.size() && argv[i].find('=') != std::string::npos && argv[i][0] != '-'; ++i) {
    }
    if (i == argv.size()) throw UserError("--probe-script: `env` runs no command");
  }
  ScriptCommand c;
  if (ends_with(argv[i], ".py")) {
    c.script = argv[i];
    c.args.assign(argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
    return c;
  }
  if (!is_python(argv[i]))
    throw UserError(fmt::format("--probe-script: the command runs '{}', not a Python training script "
                                "(expected `python3 train.py …` or `./train.py …`)", one_line(argv[i])));
  // The interpreter's own options come before the script; those taking a value take the next word.
  for (++i; i < argv.size(); ++i) {
    const std::string& a = argv[i];
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
  c.script = argv[i];
  c.args.assign(argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
  return c;
}

}  // namespace colo::estimate
