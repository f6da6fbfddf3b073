#include "daemon/job_probe.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "daemon/job_cgroup.h"
#include "core/one_line.h"

namespace colo::daemon {

namespace {

// A trace of two iterations of a large model is under 1 MiB (GPT-2 XL's at batch 2: 0.4 MiB,
// docs/DAEMON.md); one near this cap takes seconds to read and replay; past it, refused.
constexpr off_t kMaxTraceFileBytes = off_t{64} << 20;
// Its stderr: colod reads only the end of it; a probe's own messages are a few KiB.
constexpr off_t kMaxProbeErrBytes = off_t{64} << 20;

off_t probe_file_bytes(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? st.st_size : 0;
}

int open_owned(const std::string& path, const estimate::ProbeIdentity& who) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw UserError(fmt::format("probe: cannot create {}: {}", path, std::strerror(errno)));
  // The probe (the submitter) reopens its trace through /dev/fd/3, which checks the file's owner.
  if (::geteuid() == 0 && ::fchown(fd, static_cast<uid_t>(who.uid), static_cast<gid_t>(who.gid)) != 0) {
    const int e = errno;
    ::close(fd);
    throw UserError(fmt::format("probe: cannot hand {} to uid {}: {}", path, who.uid, std::strerror(e)));
  }
  return fd;
}

std::string read_fd(int fd, off_t max, bool tail) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return {};
  off_t from = 0, size = st.st_size;
  if (size > max) {
    if (!tail) throw UserError(fmt::format("probe: its trace is larger than {} MiB", max >> 20));
    from = size - max;
    size = max;
  }
  std::string out(static_cast<std::size_t>(size), '\0');
  std::size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + got, out.size() - got, from + static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
  return out;
}

// The leaf a probe's run recorded (colod's own file, in the job's root-owned directory): only a
// probe's leaf is taken.
std::optional<std::string> recorded_probe_cgroup(const std::string& record) {
  auto path = read_cgroup_record(record);
  if (!path || path->compare(path->rfind('/') + 1, 11, "colo-probe-") != 0) return std::nullopt;
  return path;
}

}  // namespace

JobProbe::JobProbe(const estimate::ProbeRequest& req, const estimate::ProbeIdentity& who, const std::string& workdir,
                   const std::string& dir, const std::string& cgroup_name, const ProbeSettings& settings,
                   double now_mono)
    : req_(req), settings_(settings), started_(now_mono) {
  // An earlier run's leaf (colod was killed while it ran): what escaped its process group then.
  record_ = dir + "/probe.cgroup";
  if (const auto old = recorded_probe_cgroup(record_)) {
    kill_cgroup(*old, 1);
    remove_cgroup(*old);
  }
  ::unlink(record_.c_str());
  out_fd_ = open_owned(dir + "/probe.trace", who);
  try {
    err_fd_ = open_owned(dir + "/probe.err", who);
    cgroup_ = create_job_cgroup(cgroup_name, nullptr);
    // Recorded before the probe starts: a colod killed from here on finds the leaf again.
    if (cgroup_ && !(std::ofstream(record_) << *cgroup_ << "\n")) drop_cgroup();
    estimate::ProbeLimits limits;
    limits.timeout_seconds = settings.timeout_seconds;
    limits.address_space_bytes = settings.address_space_bytes;
    limits.workdir = workdir;
    estimate::ProbeSpawn how;
    how.identity = &who;
    how.err_fd = err_fd_;
    how.out_fd = out_fd_;
    how.interpreter = settings.interpreter;
    if (cgroup_) how.cgroup_procs = *cgroup_ + "/cgroup.procs";
    pid_ = estimate::spawn_probe(req, limits, how);
  } catch (...) {
    ::close(out_fd_);
    if (err_fd_ >= 0) ::close(err_fd_);
    drop_cgroup();
    throw;
  }
}

JobProbe::~JobProbe() {
  if (!reaped_) kill();  // the daemon's reaper collects it
  if (work_.valid()) work_.wait();  // it reads through out_fd_
  drop_cgroup();
  ::close(out_fd_);
  ::close(err_fd_);
}

void JobProbe::kill() {
  if (reaped_) return;  // its pid (and group) may be another process's now; its leaf is dropped
  if (pid_ > 0) ::kill(-pid_, SIGKILL);
  if (cgroup_) kill_cgroup(*cgroup_, 0);  // one pass: the event loop does not wait here
}

void JobProbe::drop_cgroup() {
  if (!cgroup_) return;
  // SIGKILLed processes leave the cgroup as they exit: a moment, unless one is stuck in the
  // kernel (then the leaf stays, recorded in probe.cgroup for the next run to retry).
  if (kill_cgroup(*cgroup_, 1) && remove_cgroup(*cgroup_)) {
    cgroup_.reset();
    ::unlink(record_.c_str());
  }
}

std::string JobProbe::kill_if_past_limits(double now_mono) {
  // Once reaped, its pid (and group) may be another process's.
  if (reaped_ || !overrun_.empty()) return "";
  const std::string subject = one_line(req_.subject());
  if (now_mono - started_ >= settings_.timeout_seconds)
    overrun_ = fmt::format("probe of {} timed out after {:.0f} s", subject, settings_.timeout_seconds);
  else if (probe_file_bytes(out_fd_) > kMaxTraceFileBytes)
    overrun_ = fmt::format("probe of {} wrote a trace larger than {} MiB: killed", subject, kMaxTraceFileBytes >> 20);
  else if (probe_file_bytes(err_fd_) > kMaxProbeErrBytes)
    overrun_ = fmt::format("probe of {} wrote more than {} MiB to its stderr: killed", subject, kMaxProbeErrBytes >> 20);
  else
    return "";
  kill();
  return overrun_;
}

void JobProbe::finish(int wait_status, double now_mono, Estimator estimator) {
  reaped_ = true;
  ::kill(-pid_, SIGKILL);  // whatever the probe left behind in its group
  drop_cgroup();           // and outside it
  Outcome o;
  o.seconds = now_mono - started_;
  estimate::ProbeLimits limits;
  limits.address_space_bytes = settings_.address_space_bytes;
  if (!overrun_.empty())
    o.failure = overrun_;
  else
    o.failure = estimate::probe_failure(req_, wait_status, read_fd(err_fd_, 64 << 10, true), limits);
  if (!o.failure.empty()) {
    ready_ = std::move(o);
    return;
  }
  auto work = [this, o, estimator = std::move(estimator)]() mutable {
    std::optional<estimate::ProbeTrace> trace;
    try {
      trace = estimate::parse_probe_trace(read_fd(out_fd_, kMaxTraceFileBytes, false), "probe trace");
      trace->source = "probe " + req_.subject();
    } catch (const std::exception& e) {  // UserError, or no memory for it
      o.failure = fmt::format("probe of {} wrote no usable trace: {}", one_line(req_.subject()), one_line(e.what()));
      return o;
    }
    try {
      o.estimate = estimator(*trace);
    } catch (const std::exception& e) {
      o.failure = fmt::format("estimating from the probe's trace failed: {}", one_line(e.what()));
    }
    return o;
  };
  seconds_ = o.seconds;
  try {
    work_ = std::async(std::launch::async, work);
  } catch (...) {  // no thread to be had: on the caller's, then
    ready_ = work();
  }
}

std::optional<JobProbe::Outcome> JobProbe::outcome() {
  if (ready_) return std::exchange(ready_, std::nullopt);
  if (!work_.valid() || work_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return std::nullopt;
  try {
    return work_.get();
  } catch (...) {  // what even the worker's own handlers could not turn into a reason (no memory)
    Outcome o;
    o.failure = fmt::format("probe of {}: reading its trace failed", one_line(req_.subject()));
    o.seconds = seconds_;
    return o;
  }
}

}  // namespace colo::daemon
