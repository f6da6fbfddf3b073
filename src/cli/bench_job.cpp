#include "cli/bench_job.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "core/one_line.h"

extern char** environ;

namespace colo::cli {

BenchJob::BenchJob(std::string name, std::string command, Env env, const std::string& work_dir, const std::string& tag)
    : name_(std::move(name)), command_(std::move(command)), env_(std::move(env)),
      progress_path_(work_dir + "/" + tag + ".progress"), log_path_(work_dir + "/" + tag + ".log") {}

BenchJob::~BenchJob() { stop(2); }

void BenchJob::start() {
  ::unlink(progress_path_.c_str());
  const int log = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log < 0) throw UserError(fmt::format("bench: cannot write {}: {}", log_path_, std::strerror(errno)));
  // The environment is built before fork (no allocation in the child).
  std::vector<std::string> vars;
  for (char** e = environ; *e; ++e) {
    const std::string v = *e;
    bool replaced = false;
    for (const auto& [k, x] : env_) replaced = replaced || v.rfind(k + "=", 0) == 0;
    if (v.rfind("COLO_BENCH_PROGRESS=", 0) != 0 && !replaced) vars.push_back(v);
  }
  for (const auto& [k, x] : env_) vars.push_back(k + "=" + x);
  vars.push_back("COLO_BENCH_PROGRESS=" + progress_path_);
  std::vector<char*> envp;
  for (std::string& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log);
    throw UserError(fmt::format("bench: cannot start job {}: fork: {}", name_, std::strerror(errno)));
  }
  if (pid == 0) {
    ::setsid();
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    ::dup2(log, 1);
    ::dup2(log, 2);
    const char* argv[] = {"/bin/sh", "-c", command_.c_str(), nullptr};
    ::execve("/bin/sh", const_cast<char* const*>(argv), envp.data());
    ::_exit(127);
  }
  ::close(log);
  pid_ = pid;
  reaped_ = false;
  stopped_ = false;
  ended_how_.clear();
  last_.reset();
}

std::optional<double> BenchJob::progress() {
  std::ifstream in(progress_path_);
  std::string text;
  if (in && std::getline(in, text) && !text.empty()) {
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(text.c_str(), &end);
    while (end && (*end == ' ' || *end == '\t' || *end == '\r')) ++end;
    if (end == text.c_str() || *end != '\0' || errno != 0 || !std::isfinite(v) || v < 0)
      throw UserError(fmt::format("bench: job {} wrote '{}' to its progress file {}: expected a non-negative number",
                                  name_, one_line(text.substr(0, 60)), progress_path_));
    if (last_ && v < *last_)
      throw UserError(fmt::format("bench: job {}'s progress went back from {} to {} ({}): it must only grow", name_,
                                  *last_, v, progress_path_));
    last_ = v;
  }
  return last_;
}

bool BenchJob::ended() {
  if (reaped_) return true;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == 0) return false;
  reaped_ = true;
  if (r < 0) ended_how_ = fmt::format("could not be waited for: {}", std::strerror(errno));
  else if (WIFEXITED(status)) ended_how_ = fmt::format("exited with status {}", WEXITSTATUS(status));
  else ended_how_ = fmt::format("was killed by signal {}", WTERMSIG(status));
  return true;
}

namespace {

// To the job's session (its process group); before the child's setsid() the group does not
// exist yet, so to the child itself.
void signal_job(pid_t pid, int sig) {
  if (::kill(-pid, sig) != 0 && errno == ESRCH) ::kill(pid, sig);
}

}  // namespace

void BenchJob::stop(double grace_s) {
  if (pid_ < 0 || stopped_) return;
  stopped_ = true;
  if (!reaped_) signal_job(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  while (!ended()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      signal_job(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      reaped_ = true;
      ended_how_ = "was stopped with SIGKILL";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Whatever else of its session is left (workers, a backgrounded child, also when the job ended
  // by itself), until the group is gone: the next run must find the GPU as this one left it.
  ::kill(-pid_, SIGKILL);
  for (int i = 0; i < 500 && ::kill(-pid_, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

std::string BenchJob::log_tail(std::size_t bytes) const {
  std::ifstream in(log_path_, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  std::string t = s.str();
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  if (t.size() > bytes) t = "…" + t.substr(t.size() - bytes);
  return one_line(t);
}

}  // namespace colo::cli
