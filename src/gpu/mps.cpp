// MPS control daemons, one per GPU, driven through nvidia-cuda-mps-control.
#include "gpu/mps.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "gpu/backend.h"

extern char** environ;

namespace colo::gpu {
namespace {

// The current environment with `overrides` replacing same-named variables.
std::vector<std::string> make_env(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    bool replaced = false;
    for (const auto& [k, v] : overrides) {
      if (kv.compare(0, k.size() + 1, k + "=") == 0) replaced = true;
    }
    if (!replaced) env.push_back(std::move(kv));
  }
  for (const auto& [k, v] : overrides) env.push_back(k + "=" + v);
  return env;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// Runs `argv` with `env`, stdin fed from `input`, stdout+stderr appended to `log_path`.
// posix_spawn rather than fork+setenv: the daemon is multi-threaded.
void run(const std::string& label, const std::string& call, const std::vector<std::string>& argv,
         const std::vector<std::string>& env, const std::string& input, const std::string& log_path) {
  // A socket pair, not a pipe, as stdin: send(MSG_NOSIGNAL) cannot SIGPIPE the daemon when
  // the control binary exits without reading.
  int in_pipe[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_pipe) != 0) {
    throw GpuError(label, call, std::string("socketpair: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], STDIN_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);

  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<char*> cenv;
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0].c_str(), &fa, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(in_pipe[0]);
  if (rc != 0) {
    ::close(in_pipe[1]);
    throw GpuError(label, call, "cannot run " + argv[0] + ": " + std::strerror(rc));
  }
  // A short command; the socket buffer holds it. A control binary that exits without reading
  // is judged by its exit status.
  if (!input.empty()) {
    ssize_t n = ::send(in_pipe[1], input.data(), input.size(), MSG_NOSIGNAL);
    (void)n;
  }
  ::close(in_pipe[1]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw GpuError(label, call, std::string("waitpid: ") + std::strerror(errno));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw GpuError(label, call, describe_status(status) + " (see " + log_path + ")");
  }
}

}  // namespace

MpsDaemon::MpsDaemon(MpsOptions opts, std::string gpu_uuid)
    : opts_(std::move(opts)), uuid_(std::move(gpu_uuid)) {
  pipe_dir_ = opts_.root_dir + "/" + uuid_ + "/pipe";
  log_dir_ = opts_.root_dir + "/" + uuid_ + "/log";
}

MpsDaemon::~MpsDaemon() {
  if (!running_) return;
  try {
    stop();
  } catch (...) {
    // Destructors must not throw; stop() is called explicitly where errors matter.
  }
}

std::vector<std::pair<std::string, std::string>> MpsDaemon::client_env() const {
  return {{"CUDA_MPS_PIPE_DIRECTORY", pipe_dir_}, {"CUDA_MPS_LOG_DIRECTORY", log_dir_}};
}

void MpsDaemon::start() {
  const std::string label = "MPS for " + uuid_;
  const std::string call = opts_.control_binary + " -d";
  std::error_code ec;
  for (const std::string& d : {pipe_dir_, log_dir_}) {
    std::filesystem::create_directories(d, ec);
    if (ec) throw GpuError(label, call, "cannot create " + d + ": " + ec.message());
  }
  // Every user's jobs are this server's clients: they must reach the pipes (colod's umask is
  // 077, which would keep them out and leave each job a plain CUDA client without a word).
  for (const std::string& d : {opts_.root_dir, opts_.root_dir + "/" + uuid_, pipe_dir_, log_dir_})
    ::chmod(d.c_str(), 0755);
  auto env = make_env({{"CUDA_VISIBLE_DEVICES", uuid_},
                       {"CUDA_MPS_PIPE_DIRECTORY", pipe_dir_},
                       {"CUDA_MPS_LOG_DIRECTORY", log_dir_}});
  run(label, call, {opts_.control_binary, "-d"}, env, "", log_dir_ + "/colo-control.log");
  running_ = true;
}

void MpsDaemon::stop() {
  const std::string label = "MPS for " + uuid_;
  const std::string call = "echo quit | " + opts_.control_binary;
  auto env = make_env({{"CUDA_VISIBLE_DEVICES", uuid_},
                       {"CUDA_MPS_PIPE_DIRECTORY", pipe_dir_},
                       {"CUDA_MPS_LOG_DIRECTORY", log_dir_}});
  run(label, call, {opts_.control_binary}, env, "quit\n", log_dir_ + "/colo-control.log");
  running_ = false;
}

}  // namespace colo::gpu
