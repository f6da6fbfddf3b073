#include "slurm/slurm_control.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cctype>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/one_line.h"
#include "core/utf8.h"

extern char** environ;

namespace colo::slurm {

CommandResult run_command(const std::vector<std::string>& argv) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    throw UserError(fmt::format("{}: pipe: {}", argv.at(0), std::strerror(errno)));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(out[0]);
    ::close(err[0]);
    throw UserError(fmt::format("cannot run {}: {}", argv[0], std::strerror(rc)));
  }
  CommandResult r;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

namespace {

void check(const CommandResult& r, const std::vector<std::string>& argv) {
  if (r.status == 0) return;
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  std::string msg = r.err.empty() ? r.out : r.err;
  while (!msg.empty() && std::isspace(static_cast<unsigned char>(msg.back()))) msg.pop_back();  // no trailing "\n"
  throw UserError(fmt::format("`{}` failed ({}): {}", cmd, r.status, one_line(msg)));
}

void run_checked(const std::vector<std::string>& argv) { check(run_command(argv), argv); }

// 22.05 writes some numbers as plain integers and newer releases as {"set":…,"number":…}.
std::int64_t number(const nlohmann::json& j, const char* key, std::int64_t fallback) {
  if (!j.contains(key)) return fallback;
  const auto& v = j[key];
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_object() && v.contains("number") && v["number"].is_number_integer()) return v["number"].get<std::int64_t>();
  return fallback;
}

std::string text(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return "";
  const auto& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array() && !v.empty() && v[0].is_string()) return v[0].get<std::string>();  // newer: job_state as a list
  return "";
}

}  // namespace

std::vector<SlurmJob> parse_squeue_json(const std::string& out) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(is_valid_utf8(out) ? out : replace_invalid_utf8(out));
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("squeue --json: not JSON: {}", one_line(e.what())));
  }
  if (!j.is_object() || !j.contains("jobs") || !j["jobs"].is_array()) throw UserError("squeue --json: no \"jobs\" list");
  std::vector<SlurmJob> jobs;
  for (const auto& o : j["jobs"]) {
    if (!o.is_object()) continue;
    SlurmJob s;
    const std::int64_t id = number(o, "job_id", -1);
    if (id <= 0) continue;
    s.job_id = static_cast<std::uint64_t>(id);
    s.user_id = number(o, "user_id", -1);
    s.state = text(o, "job_state");
    s.state_reason = text(o, "state_reason");
    s.restart_cnt = static_cast<int>(number(o, "restart_cnt", 0));
    std::int64_t ec = 0;
    if (o.contains("exit_code") && o["exit_code"].is_object()) {  // newer: {"status":…,"return_code":…}
      ec = number(o["exit_code"], "return_code", 0);
    } else {
      ec = (number(o, "exit_code", 0) >> 8) & 0xff;  // 22.05: the raw wait status
    }
    s.exit_code = static_cast<int>(ec);
    s.tres_per_node = text(o, "tres_per_node");
    s.comment = text(o, "comment");
    jobs.push_back(std::move(s));
  }
  return jobs;
}

std::vector<SlurmJob> SlurmCommands::jobs() {
  const std::vector<std::string> argv = {"squeue", "--json"};
  const CommandResult r = run_command(argv);
  check(r, argv);
  return parse_squeue_json(r.out);
}

void SlurmCommands::set_request(std::uint64_t job, const std::string& tres) {
  run_checked({"scontrol", "update", fmt::format("jobid={}", job), "TresPerNode=" + tres, "StartTime=now"});
}

void SlurmCommands::release(std::uint64_t job) { run_checked({"scontrol", "release", std::to_string(job)}); }

void SlurmCommands::set_node_weight(const std::string& node, int weight) {
  run_checked({"scontrol", "update", "NodeName=" + node, fmt::format("Weight={}", weight)});
}

void SlurmCommands::set_admin_comment(std::uint64_t job, const std::string& text) {
  run_checked({"scontrol", "update", fmt::format("jobid={}", job), "AdminComment=" + text});
}

}  // namespace colo::slurm
