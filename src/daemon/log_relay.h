#pragma once
// One stream of a job's output on its way from the job's pipe to its log file, bounded per
// attempt: the first `cap` bytes are written as they come; past that only the last `tail` bytes
// are kept, and written after a note when the attempt ends. A job that prints without end cannot
// fill colod's state directory, and the end of its output (a traceback, a framework's OOM message:
// what the OOM detector and the user look for) is still there. The file only ever grows, so the
// offsets readers hold (`colo logs -f`, the attempt's log offset) stay valid.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace colo::daemon {

// What an attempt's log keeps of its output past jobs.max_log (at most the cap itself).
inline constexpr std::uint64_t kLogTailBytes = std::uint64_t{1} << 20;

class LogRelay {
 public:
  // `fd`: the log file, opened O_APPEND (not owned). `cap` 0 = no limit. `stream` ("stdout") and
  // `cap_text` ("jobs.max_log = 1024 MiB") name the limit in the notes.
  LogRelay(int fd, std::uint64_t cap, std::size_t tail, std::string stream, std::string cap_text);
  LogRelay(const LogRelay&) = delete;
  LogRelay& operator=(const LogRelay&) = delete;

  void take(const char* data, std::size_t n);
  // When anything was dropped: the note saying how much and the kept tail. Once.
  void finish();

  // Bytes past the cap, and of those the ones not kept (all but the last `tail`).
  std::uint64_t past_cap() const { return dropped_; }
  std::uint64_t lost() const { return dropped_ - std::min<std::uint64_t>(dropped_, tail_cap_); }
  // Bytes the file refused (disk full, I/O error): counted, never retried, never blocking the job.
  std::uint64_t unwritten() const { return unwritten_; }

 private:
  void write_out(const char* data, std::size_t n);

  int fd_;
  std::uint64_t cap_, written_ = 0, dropped_ = 0, unwritten_ = 0;
  std::size_t tail_cap_;
  std::string tail_;  // the last bytes past the cap; trimmed to tail_cap_ when twice as long
  std::string stream_, cap_text_;
  bool over_ = false, finished_ = false;
};

}  // namespace colo::daemon
