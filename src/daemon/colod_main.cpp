// colod: the colo daemon. `colod --fake-gpus 2x40GiB --state-dir DIR` runs it on the in-tree
// fake NVML (no GPU needed); `colod --config /etc/colo/colod.toml` on the real GPUs.
#include <climits>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <filesystem>

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include "common/exclusive_lock.h"
#include "core/error.h"
#include "core/one_line.h"
#include "daemon/config.h"
#include "daemon/api_server.h"
#include "daemon/client/policy_file.h"
#include "daemon/daemon.h"
#include "daemon/sqlite.h"
#include "daemon/shim.h"
#include "gpu/fake_nvml_env.h"
#include "gpu/nvml_backend.h"

namespace {

std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw std::runtime_error("cannot resolve /proc/self/exe");
  return std::string(buf, static_cast<size_t>(n));
}


}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "__shim") == 0) return colo::daemon::shim_main(argv[2]);

  CLI::App app{"colod: the colo daemon (collocation-aware GPU resource manager)"};
  app.set_version_flag("--version", "colod " COLO_VERSION, "print colod's version and exit");
  std::string config_file, state_dir, fake_gpus, socket, policy, metrics_listen;
  app.add_option("--config", config_file, "TOML configuration (see packaging/colod.toml)");
  app.add_option("--state-dir", state_dir, "state directory (database, job logs); overrides paths.state_dir");
  app.add_option("--fake-gpus", fake_gpus, "run on the in-tree fake NVML, e.g. 2x40GiB")
      ->check(CLI::Validator([](std::string& v) { return v.empty() ? std::string("empty value") : std::string(); }, "SPEC"));
  app.add_option("--socket", socket, "API socket (default STATE_DIR/colo.sock)");
  app.add_option("--metrics-listen", metrics_listen,
                 "serve /metrics and the dashboard on this TCP address, e.g. 127.0.0.1:9400 (port 0: any free port; "
                 "overrides web.listen)");
  app.add_option("--policy", policy, "placement policy (exclusive, round-robin, first-fit, best-fit, magm, lug, or a [policies.NAME] of the config)");
  // CLI11's own errors as one line like every other error, exit 2.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    std::string msg = e.what();
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    return "colod: error: " + colo::one_line(msg) + " (see --help)\n";
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == static_cast<int>(CLI::ExitCodes::Success) ? code : 2;
  }
  // Whatever the unit or the caller's umask: nothing colod creates is readable by others (the
  // database holds every job's argv and environment). The few paths others must reach get their
  // modes explicitly (the socket, the state directory's execute bit).
  ::umask(077);
  // Descriptor headroom: take the hard limit; the API keeps a reserve for colod's own work.
  if (rlimit rl{}; ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    ::setenv(colo::daemon::kJobNofileEnv, std::to_string(rl.rlim_cur).c_str(), 1);  // jobs get it back (shim)
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  try {
    using namespace colo::daemon;
    DaemonConfig cfg;
    if (!config_file.empty()) cfg = load_config(config_file, cfg);
    if (!state_dir.empty()) cfg.state_dir = state_dir;
    if (!socket.empty()) cfg.socket = socket;
    if (!fake_gpus.empty()) cfg.fake_gpus = fake_gpus;
    if (!metrics_listen.empty()) {
      ListenAddress::parse(metrics_listen, "--metrics-listen");
      cfg.web_listen = metrics_listen;
    }
    if (!policy.empty()) {
      if (!colo::daemon::policy_exists(policy, cfg.policies))
        throw colo::UserError("--policy: unknown policy '" + policy + "' (a shipped one or a [policies.NAME] of the config)");
      cfg.policy = policy;
      if (const std::string why = colo::daemon::policy_problem(cfg); !why.empty())
        throw colo::UserError("--policy " + policy + ": " + why);
    }
    if (cfg.state_dir.empty() || cfg.state_dir[0] != '/') {
      char cwd[PATH_MAX];
      if (getcwd(cwd, sizeof(cwd))) cfg.state_dir = std::string(cwd) + "/" + cfg.state_dir;
    }
    std::filesystem::create_directories(cfg.state_dir);
    // A socket path too long or in a missing directory would fail only after GPU discovery: say
    // so first.
    if (const std::string why = colo::daemon::socket_path_problem(cfg.socket_path()); !why.empty())
      throw colo::UserError(fmt::format("socket path '{}': {}", cfg.socket_path(), why));
    if (const auto sock_dir = std::filesystem::path(cfg.socket_path()).parent_path();
        !sock_dir.empty() && !std::filesystem::is_directory(sock_dir))
      throw colo::UserError("socket directory " + sock_dir.string() + " does not exist");
    // One colod per state directory: a second one would launch every queued job again.
    const std::string lock_path = cfg.state_dir + "/colod.lock";
    const colo::ExclusiveLock lock(lock_path, "another colod is running on " + cfg.state_dir + " (" + lock_path + " is locked)");
    colo::gpu::NvmlOptions nvml;
    nvml.library = cfg.nvml_library;
    nvml.dcgm_mode = cfg.dcgm;
    nvml.dcgm_update_interval_s = cfg.sample_interval;
    if (!cfg.dcgm_library.empty()) nvml.dcgm_library = cfg.dcgm_library;
    std::vector<std::pair<std::string, std::string>> job_env;
    if (!cfg.fake_gpus.empty()) {
      const colo::gpu::FakeNvmlSetup fake = colo::gpu::configure_fake_nvml_env(cfg.fake_gpus, cfg.state_dir + "/fake-nvml");
      nvml.library = fake.library_path;
      if (cfg.dcgm_library.empty()) nvml.dcgm_library = fake.dcgm_library_path;
      job_env = fake.job_env;
    }
    Daemon d(cfg, colo::gpu::open_nvml_backend(nvml), job_env, self_exe());
    return d.run();
  } catch (const colo::UserError& e) {
    std::cerr << "colod: error: " << colo::one_line(e.what()) << "\n";
    return 2;
  } catch (const colo::gpu::GpuError& e) {
    std::cerr << "colod: error: " << colo::one_line(e.what()) << "\n";
    return 1;
  } catch (const colo::daemon::StorageFull& e) {
    // Crash-only: what colod could not record is still on disk where the shims write it.
    std::cerr << "colod: error: its state database cannot be written, the disk is full (" << colo::one_line(e.what())
              << "); running jobs go on under their shims: start colod again once there is room, and it adopts them "
                 "and records how they ended\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "colod: fatal: " << colo::one_line(e.what()) << "\n";
    return 1;
  }
}
