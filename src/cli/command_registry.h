#pragma once
// Each src/cli/cmd_*.cpp adds its own subcommand to `colo` through a static registrar, so a new
// command is one new file and main.cpp never changes.
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace colo::cli {

// Options every subcommand may read (set on the top-level app).
struct Globals {
  std::string socket;  // --socket or $COLO_SOCKET
};
Globals& globals();

using CommandInstaller = std::function<void(CLI::App& app)>;
std::vector<CommandInstaller>& command_installers();

struct RegisterCommand {
  explicit RegisterCommand(CommandInstaller f) { command_installers().push_back(std::move(f)); }
};

}  // namespace colo::cli
