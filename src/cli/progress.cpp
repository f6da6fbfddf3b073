#include "cli/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unistd.h>

#include <fmt/format.h>

namespace colo::cli {

Progress::Progress(std::string label, std::size_t total, bool json_output)
    : label_(std::move(label)), total_(total), enabled_(!json_output && total > 0 && ::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()), last_draw_(start_ - std::chrono::seconds(1)) {}

Progress::~Progress() { finish(); }

std::string Progress::format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = std::lround(s);
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

std::string Progress::line(const std::string& label, std::size_t done, std::size_t total, double elapsed_s) {
  done = std::min(done, total);
  const double frac = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  std::string eta = "?";
  if (done > 0 && done < total) eta = format_duration(elapsed_s * (1.0 - frac) / frac);
  else if (done == total) eta = "0:00";
  return fmt::format("{}: {}/{} ({:.0f}%), {} elapsed, ETA {}", label, done, total, 100 * frac,
                     format_duration(elapsed_s), eta);
}

void Progress::update(std::size_t done) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(200) && done < total_) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::fprintf(stderr, "\r\033[K%s", line(label_, done, total_, elapsed).c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::finish() {
  if (enabled_ && drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  drawn_ = false;
  enabled_ = false;
}

}  // namespace colo::cli
