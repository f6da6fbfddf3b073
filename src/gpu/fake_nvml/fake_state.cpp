// The fake NVML's shared state directory: process records, the allocation lock, liveness.
#include "gpu/fake_nvml/fake_state.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace colo::gpu::fake {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<ProcessRecord> parse_record(int pid, const std::string& text) {
  std::istringstream in(text);
  std::string magic;
  int version = 0;
  if (!(in >> magic >> version) || magic != "colo-fake-nvml" || version != 1) return std::nullopt;
  ProcessRecord r;
  r.pid = pid;
  std::string key;
  while (in >> key) {
    if (key == "start") {
      if (!(in >> r.start_time)) return std::nullopt;
    } else if (key == "alloc") {
      Allocation a;
      if (!(in >> a.uuid >> a.mib >> a.sm_activity >> a.sm_occupancy)) return std::nullopt;
      r.allocations.push_back(std::move(a));
    } else {
      return std::nullopt;
    }
  }
  return r;
}

bool record_alive(const ProcessRecord& r) {
  auto st = process_start_time(r.pid);
  return st && *st == r.start_time;
}

}  // namespace

std::optional<std::uint64_t> process_start_time(int pid) {
  if (pid <= 0) return std::nullopt;
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  // Fields after the command name, which is in parentheses and may contain anything.
  std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream in(stat.substr(close + 1));
  std::string field;
  std::string state;
  in >> state;  // field 3
  if (state == "Z" || state == "X" || state == "x") return std::nullopt;
  // Fields 4..21, then starttime (22).
  for (int i = 4; i <= 21; ++i) {
    if (!(in >> field)) return std::nullopt;
  }
  std::uint64_t start = 0;
  if (!(in >> start)) return std::nullopt;
  return start;
}

StateDir::StateDir(std::string dir) : dir_(std::move(dir)) {}

StateDir::Lock::Lock(const std::string& dir) {
  std::string path = dir + "/lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      int err = errno;
      ::close(fd_);
      throw std::runtime_error("cannot lock " + path + ": " + std::strerror(err));
    }
  }
}

StateDir::Lock::~Lock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

std::vector<ProcessRecord> StateDir::live_processes(bool lock_held) const {
  std::vector<ProcessRecord> live;
  std::vector<ProcessRecord> dead;
  const std::string procs = dir_ + "/procs";
  if (DIR* d = ::opendir(procs.c_str())) {
    while (dirent* e = ::readdir(d)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (e->d_name[0] == '\0' || *end != '\0' || pid <= 0) continue;  // ".", tmp files
      auto rec = parse_record(static_cast<int>(pid), read_file(procs + "/" + e->d_name));
      if (!rec) continue;
      (record_alive(*rec) ? live : dead).push_back(std::move(*rec));
    }
    ::closedir(d);
  }
  if (!dead.empty()) {
    // Re-check under the lock: the pid may have been reused by a job that just registered.
    std::optional<Lock> lock;
    if (!lock_held) lock.emplace(dir_);
    for (const ProcessRecord& r : dead) {
      const std::string path = procs + "/" + std::to_string(r.pid);
      auto current = parse_record(r.pid, read_file(path));
      if (current && !record_alive(*current)) ::unlink(path.c_str());
    }
  }
  return live;
}

namespace {

// DIR/accounting/<pid>: "start <ticks>" then "peak <uuid> <MiB>" lines.
std::map<std::string, MiB> read_peaks(const std::string& text, std::uint64_t start_time) {
  std::map<std::string, MiB> peaks;
  std::istringstream in(text);
  std::string word;
  std::uint64_t start = 0;
  if (!(in >> word >> start) || word != "start" || (start_time != 0 && start != start_time)) return peaks;
  std::string uuid;
  MiB mib = 0;
  while (in >> word >> uuid >> mib)
    if (word == "peak" && mib >= 0) peaks[uuid] = std::max(peaks[uuid], mib);
  return peaks;
}

}  // namespace

void StateDir::write_record(const ProcessRecord& r) const {
  const std::string path = dir_ + "/procs/" + std::to_string(r.pid);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "colo-fake-nvml 1\nstart " << r.start_time << "\n";
    for (const Allocation& a : r.allocations) {
      out << "alloc " << a.uuid << ' ' << a.mib << ' ' << a.sm_activity << ' ' << a.sm_occupancy
          << "\n";
    }
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    throw std::runtime_error("cannot rename " + tmp + ": " + std::strerror(errno));
  }
  // Accounting: only the process itself writes its file, so read-raise-replace needs no lock.
  // (A state directory made before accounting existed has no accounting/: no peaks, as on a
  // GPU with accounting mode off.)
  const std::string acct = dir_ + "/accounting/" + std::to_string(r.pid);
  auto peaks = read_peaks(read_file(acct), r.start_time);
  for (const Allocation& a : r.allocations) {
    MiB on_device = 0;
    for (const Allocation& b : r.allocations)
      if (b.uuid == a.uuid) on_device += b.mib;
    peaks[a.uuid] = std::max(peaks[a.uuid], on_device);
  }
  std::ofstream out(acct + ".tmp", std::ios::trunc);
  if (!out) return;
  out << "start " << r.start_time << "\n";
  for (const auto& [uuid, mib] : peaks) out << "peak " << uuid << ' ' << mib << "\n";
  out.close();
  if (out) ::rename((acct + ".tmp").c_str(), acct.c_str());
}

std::optional<MiB> StateDir::accounting_peak(int pid, const std::string& uuid) const {
  const auto peaks = read_peaks(read_file(dir_ + "/accounting/" + std::to_string(pid)), 0);
  const auto it = peaks.find(uuid);
  if (it == peaks.end()) return std::nullopt;
  return it->second;
}

void StateDir::remove_record(int pid) const {
  const std::string path = dir_ + "/procs/" + std::to_string(pid);
  ::unlink(path.c_str());
}

std::optional<int> StateDir::injected_failure(int index, const std::string& call) const {
  const std::string path = dir_ + "/fail-" + std::to_string(index);
  if (::access(path.c_str(), F_OK) != 0) return std::nullopt;
  std::istringstream in(read_file(path));
  std::string line;
  bool any_line = false;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    int code = 0;
    if (!(fields >> code) || code <= 0) continue;
    any_line = true;
    std::string only;
    if (!(fields >> only) || only == call) return code;
  }
  if (!any_line) return 15;  // NVML_ERROR_GPU_IS_LOST
  return std::nullopt;
}

std::string StateDir::stored_spec() const {
  std::string s = read_file(dir_ + "/gpus.spec");
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace colo::gpu::fake
