// colo: the command-line front end. Subcommands live in cmd_*.cpp, one file each.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>

#include "cli/command_registry.h"
#include "core/one_line.h"
#include "core/error.h"

namespace colo::cli {

Globals& globals() {
  static Globals g;
  return g;
}

std::vector<CommandInstaller>& command_installers() {
  static std::vector<CommandInstaller> v;
  return v;
}

}  // namespace colo::cli

namespace {


}  // namespace

int main(int argc, char** argv) {
  using namespace colo::cli;
  CLI::App app{"colo: collocation-aware GPU resource manager for deep-learning training"};
  app.set_version_flag("--version", "colo " COLO_VERSION, "print colo's version and exit");
  app.require_subcommand(1);
  if (const char* s = std::getenv("COLO_SOCKET")) globals().socket = s;
  app.add_option("--socket", globals().socket, "colod's Unix socket (default: $COLO_SOCKET, else /run/colo/colo.sock, the packaged colod's)");
  for (auto& install : command_installers()) install(app);
  // CLI11's own errors (unknown flag, missing value) as one line like every other error, exit 2.
  const auto one_line = [](const CLI::App*, const CLI::Error& e) {
    std::string msg = e.what();
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    return "colo: error: " + colo::one_line(msg) + " (see --help)\n";
  };
  app.failure_message(one_line);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    if (code != static_cast<int>(CLI::ExitCodes::Success)) return 2;  // --help and --version go on
  } catch (const colo::UserError& e) {
    std::cerr << "colo: error: " << colo::one_line(e.what()) << "\n";
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    // The machine's state (a directory deleted or not creatable, no permission), not a bug in colo:
    // its text names the operation, the reason and the path.
    std::cerr << "colo: error: " << colo::one_line(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "colo: internal error: " << colo::one_line(e.what()) << "\n";
    return 1;
  }
  // What a command printed is its result (--json, a table): one that did not reach its reader (a
  // full disk behind a redirection) is a failure, not a success with nothing in the file.
  errno = 0;
  if (!std::cout.flush()) {
    std::cerr << "colo: error: cannot write the output: " << (errno ? std::strerror(errno) : "write error") << "\n";
    return 1;
  }
  return 0;
}
