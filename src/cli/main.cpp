// colo: the command-line front end. Subcommands live in cmd_*.cpp, one file each.
#include <cstdlib>
#include <exception>
#include <iostream>

#include "cli/command_registry.h"
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

int main(int argc, char** argv) {
  using namespace colo::cli;
  CLI::App app{"colo: collocation-aware GPU resource manager for deep-learning training"};
  app.require_subcommand(1);
  if (const char* s = std::getenv("COLO_SOCKET")) globals().socket = s;
  app.add_option("--socket", globals().socket, "colod's Unix socket (default: $COLO_SOCKET)");
  for (auto& install : command_installers()) install(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const colo::UserError& e) {
    std::cerr << "colo: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "colo: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
