#include "slurm/attempt_report.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <filesystem>
#include <random>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/limits.h"

namespace colo::slurm {

std::string reports_dir(const std::string& state_dir) { return state_dir + "/reports"; }

std::string report_path(const std::string& state_dir, std::uint64_t job_id, int restart) {
  return fmt::format("{}/{}.{}.json", reports_dir(state_dir), job_id, restart);
}

namespace {

std::string report_text(const AttemptReport& r) {
  nlohmann::ordered_json j = {{"job_id", r.job_id}, {"restart", r.restart}, {"outcome", r.outcome},
                              {"exit_code", r.exit_code}};
  j["peak_mib"] = r.peak_mib ? nlohmann::ordered_json(*r.peak_mib) : nlohmann::ordered_json();
  j["oom_line"] = r.oom_line;
  j["gpus"] = r.gpus;
  j["tres"] = r.tres;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

int outcome_rank(const std::string& o) { return o == "oom" ? 2 : o == "failed" ? 1 : 0; }

// A fresh 64-bit name part nobody can guess (the drop box is shared with every user).
std::string random_part() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}", rd(), rd());
}

}  // namespace

AttemptReport merge_attempt_reports(const AttemptReport& earlier, const AttemptReport& later) {
  AttemptReport m = later;
  if (outcome_rank(earlier.outcome) > outcome_rank(later.outcome)) {
    m.outcome = earlier.outcome;
    m.exit_code = earlier.exit_code;
    m.oom_line = earlier.oom_line;
  }
  if (m.oom_line.empty()) m.oom_line = earlier.oom_line;
  if (earlier.peak_mib && (!m.peak_mib || *earlier.peak_mib > *m.peak_mib)) m.peak_mib = earlier.peak_mib;
  if (m.gpus.empty()) m.gpus = earlier.gpus;
  if (m.tres.empty()) m.tres = earlier.tres;
  return m;
}

std::string write_attempt_report(const std::string& state_dir, const AttemptReport& r) {
  // Every `colo run` step of an attempt leaves its own file and the reader merges them: steps run
  // at once (`srun … &`) cannot lose each other's report, as a read-merge-replace would.
  // Written under a temporary name, then linked into place (link never replaces): the agent
  // never reads half a report, and a name someone else took first is never overwritten.
  const std::string text = report_text(r);
  const std::string dir = reports_dir(state_dir);
  const std::string tmp = fmt::format("{}/{}.{}.{}.tmp", dir, r.job_id, r.restart, random_part());
  // 0600: the OOM line and the GPUs are the user's business; the agent reads as root.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw UserError(fmt::format("{}: cannot create the attempt report: {}", tmp, std::strerror(errno)));
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int e = n < 0 ? errno : (n != static_cast<ssize_t>(text.size()) ? ENOSPC : (::fsync(fd) == 0 ? 0 : errno));
  ::close(fd);
  if (e != 0) {
    ::unlink(tmp.c_str());
    throw UserError(fmt::format("{}: cannot write the attempt report: {}", tmp, std::strerror(e)));
  }
  std::string path = report_path(state_dir, r.job_id, r.restart);
  int rc = ::link(tmp.c_str(), path.c_str());
  for (int tries = 0; rc != 0 && errno == EEXIST && tries < 8; ++tries) {
    // The plain name is taken (an earlier step, or another user squatting it): a random one.
    path = fmt::format("{}/{}.{}.{}.json", dir, r.job_id, r.restart, random_part());
    rc = ::link(tmp.c_str(), path.c_str());
  }
  if (rc != 0 && (errno == EPERM || errno == EOPNOTSUPP)) {  // (ENOTSUP is EOPNOTSUPP on Linux)
    // A filesystem without hard links: rename to a fresh random name (never the plain one, which
    // rename would replace if an earlier step of ours holds it).
    path = fmt::format("{}/{}.{}.{}.json", dir, r.job_id, r.restart, random_part());
    struct stat st {};
    rc = ::lstat(path.c_str(), &st) == 0 ? (errno = EEXIST, -1) : ::rename(tmp.c_str(), path.c_str());
  }
  const int link_errno = errno;
  ::unlink(tmp.c_str());  // after a rename, already gone
  if (rc != 0) throw UserError(fmt::format("{}: cannot create the attempt report: {}", path, std::strerror(link_errno)));
  return path;
}

namespace {

// Reads one candidate file; nullopt with `why` when it is not the job's user's report.
std::optional<AttemptReport> read_report_file(const std::string& path, std::uint64_t job_id, int restart,
                                              std::int64_t owner_uid, std::string* why);

// "<job>.<restart>." — the prefix of every candidate name for that attempt.
std::string attempt_prefix(std::uint64_t job_id, int restart) { return fmt::format("{}.{}.", job_id, restart); }

}  // namespace

namespace {

std::optional<AttemptReport> read_report_file(const std::string& path, std::uint64_t job_id, int restart,
                                              std::int64_t owner_uid, std::string* why) {
  auto fail = [&](std::string w) -> std::optional<AttemptReport> {
    if (why) *why = path + ": " + w;
    return std::nullopt;
  };
  // O_NONBLOCK: a FIFO planted under the report's name must not block the agent in open().
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return fail(errno == ENOENT ? "no report" : std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("not a regular file");
  }
  if (static_cast<std::int64_t>(st.st_uid) != owner_uid) {
    ::close(fd);
    return fail(fmt::format("owned by uid {}, not the job's user {}: ignored", st.st_uid, owner_uid));
  }
  if (st.st_size > 64 * 1024) {
    ::close(fd);
    return fail("larger than 64 KiB: ignored");
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  const ssize_t n = ::read(fd, text.data(), text.size());
  ::close(fd);
  if (n < 0) return fail(std::strerror(errno));
  text.resize(static_cast<size_t>(n));
  try {
    const auto j = nlohmann::json::parse(text);
    // Integers only, range-checked before narrowing: 1e300 or 4294967296 is not a restart count.
    auto integer = [&](const char* key, std::int64_t lo, std::int64_t hi) -> std::optional<std::int64_t> {
      const auto& v = j.at(key);
      if (!v.is_number_integer()) return std::nullopt;
      if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(hi)) return std::nullopt;
        return static_cast<std::int64_t>(u);
      }
      const auto x = v.get<std::int64_t>();
      if (x < lo || x > hi) return std::nullopt;
      return x;
    };
    AttemptReport r;
    const auto& id = j.at("job_id");
    if (!id.is_number_unsigned()) return fail("job_id is not a job id");
    r.job_id = id.get<std::uint64_t>();
    const auto rs = integer("restart", 0, 1 << 20);
    const auto ec = integer("exit_code", -(1ll << 31), (1ll << 31) - 1);
    if (!rs || !ec) return fail("restart or exit_code is not an integer in range");
    r.restart = static_cast<int>(*rs);
    if (r.job_id != job_id || r.restart != restart) return fail("names another attempt");
    r.outcome = j.at("outcome").get<std::string>();
    r.exit_code = static_cast<int>(*ec);
    if (j.contains("peak_mib") && !j["peak_mib"].is_null()) {
      const auto p = integer("peak_mib", 0, limits::kMaxGpuMiB);
      if (!p) return fail("peak_mib out of range");
      r.peak_mib = *p;
    }
    r.oom_line = j.value("oom_line", std::string());
    r.gpus = j.value("gpus", std::string());
    r.tres = j.value("tres", std::string());
    return r;
  } catch (const nlohmann::json::exception& e) {
    return fail(std::string("not a report: ") + e.what());
  }
}

}  // namespace

std::optional<AttemptReport> read_attempt_report(const std::string& state_dir, std::uint64_t job_id, int restart,
                                                 std::int64_t owner_uid, std::string* why) {
  // The plain name and every <job>.<restart>.<random>.json: one file per `colo run` step (or a
  // name squatted by another user, which read_report_file refuses by owner).
  std::string first_why;
  std::vector<std::pair<std::pair<std::int64_t, std::string>, AttemptReport>> found;  // ((mtime ns, name), report)
  auto consider = [&](const std::string& path, std::string* w) {
    struct stat st {};
    if (auto r = read_report_file(path, job_id, restart, owner_uid, w)) {
      const std::int64_t mtime = ::lstat(path.c_str(), &st) == 0
                                     ? static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec
                                     : 0;
      found.push_back({{mtime, path}, std::move(*r)});
    }
  };
  consider(report_path(state_dir, job_id, restart), &first_why);
  const std::string prefix = attempt_prefix(job_id, restart);
  const std::string dir = reports_dir(state_dir);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  std::error_code ec;
  std::size_t owned = 0;
  for (std::filesystem::directory_iterator it(dir, ec), end; dfd >= 0 && !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() + 5 || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - 5, 5, ".json") != 0 || name == prefix + "json")
      continue;
    // Other users' files (names squatted by the thousand) are passed over unopened and uncounted:
    // they must not push the job user's own report past the bound below.
    struct stat st {};
    if (::fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<std::int64_t>(st.st_uid) != owner_uid)
      continue;
    // A bound on what the job's own user can make the agent read for one attempt.
    if (++owned > kMaxReportsPerAttempt) break;
    std::string ignored;
    consider(it->path().string(), &ignored);
  }
  if (dfd >= 0) ::close(dfd);
  if (found.empty()) {
    if (why) *why = first_why;
    return std::nullopt;
  }
  // Oldest first, so the merge's "later" step is the one written last.
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  AttemptReport merged = found.front().second;
  for (std::size_t k = 1; k < found.size(); ++k) merged = merge_attempt_reports(merged, found[k].second);
  return merged;
}

int remove_stale_reports(const std::string& state_dir, const std::set<std::uint64_t>& listed, std::int64_t min_age_s) {
  const std::string dir = reports_dir(state_dir);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (dfd < 0) return 0;
  const std::int64_t now = static_cast<std::int64_t>(::time(nullptr));
  int removed = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const std::size_t dot = name.find('.');
    if (dot == 0 || dot == std::string::npos || dot > 20 || name.find_first_not_of("0123456789") != dot) continue;
    std::uint64_t job = 0;
    try {
      job = std::stoull(name.substr(0, dot));
    } catch (const std::exception&) {
      continue;
    }
    if (listed.count(job)) continue;
    struct stat st {};
    if (::fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode)) continue;
    if (now - static_cast<std::int64_t>(st.st_ctime) < min_age_s) continue;
    if (::unlinkat(dfd, name.c_str(), 0) == 0) ++removed;  // the link itself, never what it points to
  }
  ::close(dfd);
  return removed;
}

}  // namespace colo::slurm
