#pragma once
// A one-line progress meter with an ETA for long CLI work (colo sim on large traces, colo
// estimate eval, colo gpumemnet train|cv). It draws on stderr only when stderr is a terminal
// and the command does not print JSON, so pipes, logs and --json output stay clean. Redraws at
// most every 0.2 s; the line is cleared when the work ends.
#include <chrono>
#include <cstddef>
#include <string>

namespace colo::cli {

class Progress {
 public:
  Progress(std::string label, std::size_t total, bool json_output);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void update(std::size_t done);
  void finish();
  bool enabled() const { return enabled_; }

  // "1:05" / "2:03:04"
  static std::string format_duration(double seconds);
  // The line it draws (without the carriage return), for tests.
  static std::string line(const std::string& label, std::size_t done, std::size_t total, double elapsed_s);

 private:
  std::string label_;
  std::size_t total_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace colo::cli
