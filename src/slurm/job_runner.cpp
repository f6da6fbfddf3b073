#include "slurm/job_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/split_list.h"
#include "daemon/proc.h"
#include "gpu/backend.h"

namespace colo::slurm {

namespace {

std::atomic<int> g_signal{0};
void remember_signal(int sig) { g_signal = sig; }
// SIGCHLD only interrupts poll(): the job may end while a process it left in the background
// still holds its stdout/stderr open, and colo run must not wait for that one.
void child_changed(int) {}

constexpr size_t kTailBytes = 256 * 1024;  // as colod: the OOM message is near the end

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;  // our own output is gone (closed pipe): keep watching the job regardless
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void keep_tail(std::string& tail, const char* p, size_t n) {
  tail.append(p, n);
  if (tail.size() > 2 * kTailBytes) tail.erase(0, tail.size() - kTailBytes);
}

}  // namespace

std::vector<int> job_gpu_indices(const char* slurm_job_gpus, const char* cuda_visible_devices) {
  const char* src = slurm_job_gpus && *slurm_job_gpus ? slurm_job_gpus : cuda_visible_devices;
  std::vector<int> out;
  if (!src) return out;
  for (const std::string& item : split_list(src)) {
    if (item.empty() || item.size() > 4 || item.find_first_not_of("0123456789") != std::string::npos) return {};
    out.push_back(std::stoi(item));
  }
  return out;
}

int exit_code_for(const RunResult& r, int hold_exit_code) {
  if (r.oom && r.status != 0) return hold_exit_code;
  if (r.status == hold_exit_code) return 1;
  return r.status;
}

RunResult run_and_watch(const std::vector<std::string>& argv, gpu::GpuBackend* backend, const std::vector<int>& gpus,
                        double sample_seconds) {
  if (argv.empty()) throw UserError("colo run: no command (give it after --)");
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)
    throw UserError(fmt::format("colo run: pipe: {}", std::strerror(errno)));
  int exec_pipe[2];  // reports an exec failure from the child
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) throw UserError(fmt::format("colo run: pipe: {}", std::strerror(errno)));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t child = ::fork();
  if (child < 0) throw UserError(fmt::format("colo run: fork: {}", std::strerror(errno)));
  if (child == 0) {
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execvp(args[0], args.data());
    const int e = errno;
    (void)!::write(exec_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(exec_pipe[1]);
  int exec_errno = 0;
  if (::read(exec_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno) {
    ::close(exec_pipe[0]);
    ::waitpid(child, nullptr, 0);
    throw UserError(fmt::format("colo run: cannot run '{}': {}", argv[0], std::strerror(exec_errno)));
  }
  ::close(exec_pipe[0]);

  struct sigaction sa {};
  sa.sa_handler = remember_signal;
  ::sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2}) ::sigaction(sig, &sa, nullptr);
  struct sigaction chld {};
  chld.sa_handler = child_changed;
  ::sigemptyset(&chld.sa_mask);
  chld.sa_flags = SA_NOCLDSTOP;
  ::sigaction(SIGCHLD, &chld, nullptr);

  RunResult result;
  std::string out_tail, err_tail;
  std::map<int, MiB> peak_by_gpu;  // only GPUs that answered at least once
  std::set<pid_t> seen_pids{child};  // every process of the job seen, for NVML accounting
  bool child_gone = false;          // reaped (a background process may still hold its pipes)
  auto sample = [&] {
    if (!backend) return;
    // Once the child is reaped its pid may be another process's: no pid is looked up then, but
    // the GPUs still answer (a job too short for any sample still gets a reading).
    std::vector<pid_t> pids;
    if (!child_gone) {
      pids = daemon::descendants_of(child);
      pids.push_back(child);
    }
    seen_pids.insert(pids.begin(), pids.end());
    for (int g : gpus) {
      try {
        const gpu::DeviceSample s = backend->sample(g);
        MiB used = 0;
        // On a MIG-enabled GPU the processes are listed per instance, not for the whole GPU.
        auto add = [&](const gpu::MemorySample& m) {
          for (pid_t p : pids)
            if (auto it = m.process_mib.find(p); it != m.process_mib.end()) used += it->second;
        };
        add(s.memory);
        for (const gpu::MigSample& mig : s.mig) add(mig.memory);
        peak_by_gpu[g] = std::max(peak_by_gpu[g], used);
      } catch (const std::exception&) {
        // A failed sample leaves the peak as it was; the job's own outcome does not depend on it.
      }
    }
  };
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  auto next_sample = std::chrono::steady_clock::now();
  char buf[65536];
  int status = 0;
  auto drain = [&] {
    // What the job wrote before it ended is in the pipes; a background process that still holds
    // them may write on, and is not waited for (reads stop at "nothing more now").
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0) continue;
      ::fcntl(fds[i].fd, F_SETFL, ::fcntl(fds[i].fd, F_GETFL) | O_NONBLOCK);
      for (;;) {
        const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
        if (n > 0) {
          write_all(i == 0 ? 1 : 2, buf, static_cast<size_t>(n));
          keep_tail(i == 0 ? out_tail : err_tail, buf, static_cast<size_t>(n));
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        break;
      }
      ::close(fds[i].fd);
      fds[i].fd = -1;
      --open_fds;
    }
  };
  while (open_fds > 0) {
    if (const int sig = g_signal.exchange(0)) ::kill(child, sig);
    if (::waitpid(child, &status, WNOHANG) == child) {
      child_gone = true;  // reaped: its descendants are no longer found through it
      drain();
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_sample) {
      sample();
      next_sample = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(sample_seconds));
    }
    const int wait_ms = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(next_sample - std::chrono::steady_clock::now()).count());
    const int r = ::poll(fds, 2, std::max(1, wait_ms));
    if (r < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        write_all(i == 0 ? 1 : 2, buf, static_cast<size_t>(n));
        keep_tail(i == 0 ? out_tail : err_tail, buf, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  sample();
  while (!child_gone && ::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) break;
    if (const int sig = g_signal.exchange(0)) ::kill(child, sig);
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.oom = daemon::find_oom(err_tail);
  if (!result.oom) result.oom = daemon::find_oom(out_tail);
  if (backend && !gpus.empty()) {
    // NVML accounting (when on) knows each process' true peak, even one between samples or
    // just before exit; the sum over the job's processes bounds the job's peak from above.
    for (int g : gpus) {
      MiB accounted = 0;
      bool any = false;
      for (pid_t p : seen_pids) {
        try {
          if (const auto m = backend->process_peak_mib(g, p)) {
            accounted += *m;
            any = true;
          }
        } catch (const std::exception&) {
          // as a failed sample: the sampled peak stands
        }
      }
      if (any) peak_by_gpu[g] = std::max(peak_by_gpu[g], accounted);
    }
    // No GPU answered (a wrong SLURM_JOB_GPUS, NVML failing): no peak, rather than a false 0.
    if (!peak_by_gpu.empty()) {
      MiB peak = 0;
      for (const auto& [g, m] : peak_by_gpu) peak = std::max(peak, m);
      result.peak_mib = peak;
    }
  }
  return result;
}

}  // namespace colo::slurm
