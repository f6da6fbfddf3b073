#include "daemon/history_report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/one_line.h"
#include "daemon/sqlite.h"

namespace colo::daemon {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxPoints = 4000;
// colod's slots are a host's GPUs and MIG instances: far fewer than this. A larger number in the
// database is damage (each slot is a series in the report: 200 000 of them took 1.8 GB).
constexpr std::int64_t kMaxSlots = 4096;
// Times are Unix seconds; anything beyond ±10^12 s (or not a number at all) is damage.
constexpr double kMaxTime = 1e12;

// A damaged row: the caller turns this into "not a readable colod database (…)".
[[noreturn]] void damaged(const std::string& what) { throw std::runtime_error(what); }

// Column `col` of a row as a time: a number (SQLite keeps 'abc' in a REAL column as text and
// reads it as 0), finite and within kMaxTime; `type` is that column's typeof().
std::optional<double> time_of(const Stmt& s, int col, int type_col, bool nullable, const std::string& what) {
  const std::string type = s.text(type_col);
  if (type == "null" && nullable) return std::nullopt;
  if (type != "integer" && type != "real") damaged(fmt::format("{} is {}, not a time", what, type == "null" ? "missing" : "'" + one_line(s.text(col)) + "'"));
  const double v = s.f64(col);
  if (!(std::abs(v) <= kMaxTime)) damaged(fmt::format("{} is {:g}, not a time", what, v));
  return v;
}

int slot_of(std::int64_t v, const std::string& what) {
  if (v < 0 || v >= kMaxSlots) damaged(fmt::format("{}: slot {} is outside 0…{}", what, v, kMaxSlots - 1));
  return static_cast<int>(v);
}

struct Span {
  std::int64_t job = 0;
  int n = 0;
  std::vector<int> slots;
  double start = 0, end = -1;
  std::string outcome;
  bool collocated = false;
};

json history_report_of(const std::string& state_dir, const std::string& path);  // below

}  // namespace

json history_report_run(const std::string& state_dir) {
  const std::string path = state_dir + "/colo.db";
  if (!std::filesystem::is_regular_file(path))
    throw UserError(fmt::format("--state-dir: no colod database at {}", path));
  try {
    return history_report_of(state_dir, path);
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    // A damaged file, or an SQLite database of something else: say so, not "internal error".
    throw UserError(fmt::format("--state-dir: {} is not a readable colod database ({})", path, one_line(e.what())));
  }
}

namespace {

json history_report_of(const std::string& state_dir, const std::string& path) {
  Db db(path, Db::ReadOnly{});

  struct JobInfo {
    std::string name, state;
    double submit = 0;
    std::optional<double> end, first_start;
    bool oomed = false;
  };
  std::map<std::int64_t, JobInfo> jobs;
  {
    auto s = db.prepare(
        "SELECT id, name, state, submit_time, end_time, typeof(submit_time), typeof(end_time) FROM jobs ORDER BY id");
    while (s.step()) {
      const std::string what = fmt::format("job {}", s.i64(0));
      jobs[s.i64(0)] = JobInfo{s.text(1), s.text(2), *time_of(s, 3, 5, false, what + ": submit_time"),
                               time_of(s, 4, 6, true, what + ": end_time"), std::nullopt, false};
    }
  }
  if (jobs.empty()) throw UserError(fmt::format("--state-dir: the database at {} holds no jobs", path));
  double t0 = jobs.begin()->second.submit;
  for (const auto& [id, j] : jobs) t0 = std::min(t0, j.submit);

  std::vector<Span> spans;
  int gpus = 0;
  {
    auto s = db.prepare(
        "SELECT job_id, n, slots, start_time, end_time, outcome, id, typeof(start_time), typeof(end_time) FROM attempts "
        "WHERE start_time IS NOT NULL ORDER BY id");
    while (s.step()) {
      Span sp;
      const std::string what = fmt::format("attempt {}", s.i64(6));
      sp.job = s.i64(0);
      auto it = jobs.find(sp.job);
      if (it == jobs.end()) damaged(fmt::format("{} belongs to job {}, which the jobs table does not hold", what, sp.job));
      const std::int64_t n = s.i64(1);
      if (n < 1 || n > 1'000'000) damaged(fmt::format("{}: attempt number {} is out of range", what, n));
      sp.n = static_cast<int>(n);
      const json slots = json::parse(s.text(2));
      if (!slots.is_array() || slots.empty()) damaged(what + ": slots is not a list of GPU slots");
      for (const json& g : slots) {
        if (!g.is_number_integer()) damaged(what + ": slots is not a list of GPU slots");
        if (g.is_number_unsigned() && g.get<std::uint64_t>() >= static_cast<std::uint64_t>(kMaxSlots))
          damaged(fmt::format("{}: slot {} is outside 0…{}", what, g.get<std::uint64_t>(), kMaxSlots - 1));
        sp.slots.push_back(slot_of(g.get<std::int64_t>(), what));
      }
      sp.start = *time_of(s, 3, 7, false, what + ": start_time");
      sp.end = time_of(s, 4, 8, true, what + ": end_time").value_or(-1);
      sp.outcome = s.text(5);
      for (int g : sp.slots) gpus = std::max(gpus, g + 1);
      if (!it->second.first_start || sp.start < *it->second.first_start) it->second.first_start = sp.start;
      if (sp.outcome == "oom") it->second.oomed = true;
      spans.push_back(std::move(sp));
    }
  }
  // Shared a GPU: two attempts on one slot that overlap in time (a running one has no end yet).
  // Per slot, a sweep by start time against the attempts still running then.
  auto end_of = [](const Span& s) { return s.end < 0 ? 1e300 : s.end; };
  for (int g = 0; g < gpus; ++g) {
    std::vector<Span*> on;
    for (Span& s : spans)
      if (std::find(s.slots.begin(), s.slots.end(), g) != s.slots.end()) on.push_back(&s);
    std::sort(on.begin(), on.end(), [](const Span* a, const Span* b) { return a->start < b->start; });
    std::vector<Span*> active;
    for (Span* s : on) {
      std::erase_if(active, [&](const Span* a) { return end_of(*a) <= s->start; });
      if (!active.empty()) {
        s->collocated = true;
        for (Span* a : active) a->collocated = true;
      }
      active.push_back(s);
    }
  }

  json out_jobs = json::array();
  int oom = 0;
  for (const Span& sp : spans) {
    const JobInfo& j = jobs[sp.job];
    std::string state = sp.outcome == "oom" ? "oom"
                         : sp.outcome == "done" ? (j.oomed ? "recovered" : "done")
                         : sp.outcome.empty() ? "running"
                                              : sp.outcome;  // failed, cancelled, lost
    oom += sp.outcome == "oom";
    out_jobs.push_back({{"id", sp.job}, {"workload", j.name}, {"gpus", sp.slots}, {"submit", j.submit - t0},
                        {"start", sp.start - t0}, {"end", sp.end >= 0 ? json(sp.end - t0) : json(nullptr)},
                        {"state", state}, {"collocated", sp.collocated}, {"attempt", sp.n}});
  }

  // Summary over finished jobs, as the simulator's.
  double last_end = t0, wait = 0, jct = 0;
  std::size_t done = 0;
  for (const auto& [id, j] : jobs) {
    if (j.end) last_end = std::max(last_end, *j.end);
    if (j.state != "done" || !j.end || !j.first_start) continue;
    ++done;
    wait += *j.first_start - j.submit;
    jct += *j.end - j.submit;
  }
  json summary{{"makespan_s", last_end - t0}, {"energy_mj", nullptr}, {"avg_wait_s", done ? wait / done : 0.0},
               {"avg_jct_s", done ? jct / done : 0.0}, {"oom_crashes", oom}, {"lower_bound_s", nullptr},
               {"completed", done}, {"jobs", jobs.size()}};

  // Samples: one row per slot per tick; ticks thinned to at most kMaxPoints. Only those from the
  // first submission on: before it the GPUs idled (colod's own start).
  std::map<double, std::map<int, std::pair<std::int64_t, json>>> ticks;
  {
    auto s = db.prepare(
        "SELECT time, slot, used_mib, smact, typeof(time), rowid FROM gpu_samples WHERE time >= ? ORDER BY time, slot");
    s.bind(1, t0);
    while (s.step()) {
      const std::string what = fmt::format("GPU sample {}", s.i64(5));
      time_of(s, 0, 4, false, what + ": time");
      const int slot = slot_of(s.i64(1), what);
      gpus = std::max(gpus, slot + 1);
      ticks[s.f64(0)][slot] = {s.i64(2), s.is_null(3) ? json(nullptr) : json(s.f64(3))};
    }
  }
  // Queue length: +1 at submission, −1 at the first start (or the end of a job never started).
  std::vector<std::pair<double, int>> changes;
  for (const auto& [id, j] : jobs) {
    changes.emplace_back(j.submit, +1);
    if (j.first_start) changes.emplace_back(*j.first_start, -1);
    else if (j.end) changes.emplace_back(*j.end, -1);
  }
  std::sort(changes.begin(), changes.end());
  const std::size_t step = ticks.size() > kMaxPoints ? (ticks.size() + kMaxPoints - 1) / kMaxPoints : 1;
  json t = json::array(), queue = json::array();
  std::vector<json> used(static_cast<std::size_t>(gpus), json::array()), smact(static_cast<std::size_t>(gpus), json::array());
  std::size_t ci = 0, idx = 0;
  int waiting = 0;
  for (const auto& [time, per_slot] : ticks) {
    while (ci < changes.size() && changes[ci].first <= time) waiting += changes[ci++].second;
    if (idx++ % step != 0 && idx != ticks.size()) continue;
    t.push_back(time - t0);
    queue.push_back(std::max(0, waiting));
    for (int g = 0; g < gpus; ++g) {
      auto it = per_slot.find(g);
      used[static_cast<std::size_t>(g)].push_back(it == per_slot.end() ? json(nullptr) : json(it->second.first));
      smact[static_cast<std::size_t>(g)].push_back(it == per_slot.end() ? json(nullptr) : it->second.second);
    }
  }
  json per_gpu = json::array();
  for (int g = 0; g < gpus; ++g)
    per_gpu.push_back({{"slot", g}, {"used_mib", used[static_cast<std::size_t>(g)]}, {"smact", smact[static_cast<std::size_t>(g)]}});

  return {{"label", fmt::format("colod history ({})", state_dir)},
          {"summary", summary},
          {"gpus", gpus},
          {"gpu_memory_mib", nullptr},
          {"jobs", out_jobs},
          {"series", {{"t", t}, {"gpus", per_gpu}, {"queue_length", queue}}}};
}

}  // namespace

}  // namespace colo::daemon
