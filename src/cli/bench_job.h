#pragma once
// One job of `colo bench collocation`: its command, run by /bin/sh in a session of its own (so
// stopping it stops everything it started), with its GPU (CUDA_VISIBLE_DEVICES) and its progress
// file in the environment, its output in a log file.
//
// The progress protocol: the job writes how much work it has done so far (steps, samples: any
// non-negative number that grows at the rate it trains) into the file $COLO_BENCH_PROGRESS,
// replacing the file's content (best: write a temporary file and rename it over). Throughput is
// the growth of that number per second; the harness never needs to know its unit, because
// slowdowns are ratios of one job's own throughputs. docs/SIMULATOR.md has a PyTorch snippet.
#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace colo::cli {

class BenchJob {
 public:
  using Env = std::vector<std::pair<std::string, std::string>>;
  // `tag` names this run's files in `work_dir` (<tag>.progress, <tag>.log).
  BenchJob(std::string name, std::string command, Env env, const std::string& work_dir, const std::string& tag);
  ~BenchJob();  // stops it if still running
  BenchJob(const BenchJob&) = delete;
  BenchJob& operator=(const BenchJob&) = delete;

  void start();  // throws colo::UserError when it cannot be started
  // The number last written to the progress file (nullopt before the first report; a file
  // caught mid-write keeps the previous value). Throws UserError on a report that is not a
  // non-negative number, or one that went backwards.
  std::optional<double> progress();
  // Whether it has ended (reaps it); then `how_it_ended` says how.
  bool ended();
  const std::string& how_it_ended() const { return ended_how_; }
  // SIGTERM to its session, SIGKILL after `grace_s`; returns once it is reaped and its session
  // has no process left (also when it had ended by itself). Once per start().
  void stop(double grace_s);
  // The last `bytes` of its output on one line (newlines escaped), for error messages.
  std::string log_tail(std::size_t bytes) const;
  const std::string& name() const { return name_; }

 private:
  std::string name_, command_;
  Env env_;
  std::string progress_path_, log_path_;
  pid_t pid_ = -1;
  bool reaped_ = true;
  bool stopped_ = false;
  std::string ended_how_;
  std::optional<double> last_;
};

}  // namespace colo::cli
