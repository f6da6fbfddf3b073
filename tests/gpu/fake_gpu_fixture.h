#pragma once
// Test fixture: a fresh fake-NVML state directory per test, the NVML backend opened on the
// fake library through the real dlopen path, and fake jobs run as real child processes.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gpu/fake_nvml_env.h"
#include "gpu/nvml_backend.h"

extern char** environ;

namespace colo::gpu::testing {

inline std::string make_temp_dir() {
  std::string templ = (std::filesystem::temp_directory_path() / "colo-gpu-test-XXXXXX").string();
  if (!::mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
  return templ;
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fake job child process; killed (SIGKILL) and reaped on destruction if still running.
class FakeJob {
 public:
  FakeJob(const std::string& cvd, std::vector<std::string> args, const std::string& stderr_path) {
    std::vector<std::string> argv{fake_job_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      if (std::string(*e).rfind("CUDA_VISIBLE_DEVICES=", 0) != 0) env.emplace_back(*e);
    }
    if (!cvd.empty()) env.push_back("CUDA_VISIBLE_DEVICES=" + cvd);
    std::vector<char*> cargv, cenv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    for (auto& e : env) cenv.push_back(e.data());
    cenv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    int rc = posix_spawn(&pid_, argv[0].c_str(), &fa, nullptr, cargv.data(), cenv.data());
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) throw std::runtime_error("posix_spawn " + argv[0] + " failed");
  }
  ~FakeJob() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  FakeJob(const FakeJob&) = delete;
  FakeJob& operator=(const FakeJob&) = delete;

  int pid() const { return pid_; }
  void signal(int sig) const { ::kill(pid_, sig); }
  // waitpid status
  int wait() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
};

// Polls `cond` until it holds; a generous deadline only guards against hanging forever.
inline bool eventually(const std::function<bool()>& cond) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

class FakeNvmlTest : public ::testing::Test {
 protected:
  void TearDown() override {
    backend_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Configures the fake for `spec` in a fresh directory and opens the backend on it.
  GpuBackend& open(const std::string& spec) {
    dir_ = make_temp_dir();
    backend_ = open_fake_nvml_backend(spec, dir_);
    return *backend_;
  }

  std::string err_path(const std::string& name) const { return dir_ + "/" + name + ".stderr"; }

  std::unique_ptr<FakeJob> job(const std::string& cvd, std::vector<std::string> args,
                               const std::string& name = "job") {
    return std::make_unique<FakeJob>(cvd, std::move(args), err_path(name));
  }

  // 20 fake jobs of 100..119 MiB on GPU 0 (more than the backend's first 16 process slots): each
  // is listed with its own memory.
  void expect_twenty_processes_listed(GpuBackend& b) {
    std::vector<std::unique_ptr<FakeJob>> jobs;
    for (int i = 0; i < 20; ++i)
      jobs.push_back(job(fake_gpu_uuid(0), {"--mem", std::to_string(100 + i) + "MiB", "--hold", "inf"},
                         "j" + std::to_string(i)));
    ASSERT_TRUE(eventually([&] { return b.sample(0).memory.process_mib.size() == 20; }));
    const auto s = b.sample(0);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(s.memory.process_mib.at(jobs[i]->pid()), 100 + i);
    EXPECT_EQ(s.memory.used_mib, 20 * 100 + 190);
  }

  MiB process_mib(int index, int pid) {
    auto s = backend_->sample(index);
    auto it = s.memory.process_mib.find(pid);
    return it == s.memory.process_mib.end() ? -1 : it->second;
  }

  std::string dir_;
  std::unique_ptr<GpuBackend> backend_;
};

}  // namespace colo::gpu::testing
