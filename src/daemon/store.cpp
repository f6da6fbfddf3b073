#include "daemon/store.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace colo::daemon {

using nlohmann::json;

namespace {

constexpr const char* kSchema = R"SQL(
CREATE TABLE IF NOT EXISTS jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uid INTEGER NOT NULL, gid INTEGER NOT NULL, user TEXT NOT NULL,
  name TEXT NOT NULL, argv TEXT NOT NULL, env TEXT NOT NULL, workdir TEXT NOT NULL,
  gpus INTEGER NOT NULL,
  need_mib INTEGER, need_source TEXT NOT NULL, need_explanation TEXT NOT NULL,
  requested_mib INTEGER, requested_source TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  state TEXT NOT NULL, submit_time REAL NOT NULL, end_time REAL,
  attempts INTEGER NOT NULL DEFAULT 0,
  recovery_need_mib INTEGER, recovery_idle_only INTEGER NOT NULL DEFAULT 0, recovery_seq INTEGER,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  exit_code INTEGER, reason TEXT NOT NULL DEFAULT '',
  checkpoint INTEGER NOT NULL DEFAULT 0, queue_seq INTEGER,
  smact REAL, smact_source TEXT NOT NULL DEFAULT '', umask INTEGER NOT NULL DEFAULT 18
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE TABLE IF NOT EXISTS attempts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  n INTEGER NOT NULL,
  state TEXT NOT NULL,
  slots TEXT NOT NULL, uuids TEXT NOT NULL,
  reserve_mib INTEGER NOT NULL, exclusive INTEGER NOT NULL, recovery INTEGER NOT NULL,
  dir TEXT NOT NULL,
  shim_pid INTEGER, shim_start INTEGER,
  launch_time REAL NOT NULL, start_time REAL, end_time REAL,
  exit_code INTEGER, signal INTEGER,
  outcome TEXT NOT NULL DEFAULT '', evidence TEXT NOT NULL DEFAULT '',
  peak_mib INTEGER,
  out_offset INTEGER NOT NULL DEFAULT 0, err_offset INTEGER NOT NULL DEFAULT 0,
  slot_notice REAL, slot_stop REAL, slot_protocol INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS attempts_job ON attempts(job_id);
CREATE INDEX IF NOT EXISTS attempts_state ON attempts(state);
CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER, time REAL NOT NULL, kind TEXT NOT NULL, message TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_job ON events(job_id);
CREATE TABLE IF NOT EXISTS gpu_state (
  uuid TEXT PRIMARY KEY, slot INTEGER NOT NULL, drained INTEGER NOT NULL, reason TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS gpu_samples (
  time REAL NOT NULL, slot INTEGER NOT NULL, used_mib INTEGER NOT NULL, smact REAL, power_w REAL
);
CREATE INDEX IF NOT EXISTS gpu_samples_time ON gpu_samples(time);
CREATE INDEX IF NOT EXISTS jobs_end_time ON jobs(end_time);
CREATE TABLE IF NOT EXISTS job_samples (time REAL NOT NULL, job_id INTEGER NOT NULL, mib INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS job_samples_job ON job_samples(job_id, time);
CREATE INDEX IF NOT EXISTS job_samples_time ON job_samples(time);
CREATE TABLE IF NOT EXISTS history (
  fingerprint TEXT PRIMARY KEY, peak_mib INTEGER NOT NULL, runs INTEGER NOT NULL, last_time REAL NOT NULL,
  smact REAL, smact_runs INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS probes (
  job_id INTEGER PRIMARY KEY REFERENCES jobs(id),
  request TEXT NOT NULL, estimator TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending', runs INTEGER NOT NULL DEFAULT 0,
  seconds REAL, peak_mib REAL, estimate_mib INTEGER, detail TEXT NOT NULL DEFAULT ''
);
)SQL";

constexpr const char* kJobCols =
    "id, uid, gid, user, name, argv, env, workdir, gpus, need_mib, need_source, need_explanation, "
    "requested_mib, requested_source, fingerprint, state, submit_time, end_time, attempts, "
    "recovery_need_mib, recovery_idle_only, recovery_seq, cancel_requested, exit_code, reason, checkpoint, queue_seq, smact, smact_source, umask";

JobRow read_job(const Stmt& s) {
  JobRow j;
  j.id = static_cast<JobId>(s.i64(0));
  j.uid = s.i64(1);
  j.gid = s.i64(2);
  j.user = s.text(3);
  j.name = s.text(4);
  j.argv = json::parse(s.text(5)).get<std::vector<std::string>>();
  j.env = json::parse(s.text(6));
  j.workdir = s.text(7);
  j.gpus = static_cast<int>(s.i64(8));
  j.need_mib = s.opt_i64(9);
  j.need_source = s.text(10);
  j.need_explanation = s.text(11);
  j.requested_mib = s.opt_i64(12);
  j.requested_source = s.text(13);
  j.fingerprint = s.text(14);
  const std::string st = s.text(15);
  auto parsed = job_state_from_string(st);
  if (!parsed) throw std::runtime_error(fmt::format("store: job {} has unknown state '{}'", j.id, st));
  j.state = *parsed;
  j.submit_time = s.f64(16);
  j.end_time = s.opt_f64(17);
  j.attempts = static_cast<int>(s.i64(18));
  j.recovery_need_mib = s.opt_i64(19);
  j.recovery_alone = s.i64(20) != 0;
  j.recovery_seq = s.opt_i64(21);
  j.cancel_requested = s.i64(22) != 0;
  if (auto e = s.opt_i64(23)) j.exit_code = static_cast<int>(*e);
  j.reason = s.text(24);
  j.checkpoint = s.i64(25) != 0;
  j.queue_seq = s.opt_i64(26);
  j.smact = s.opt_f64(27);
  j.smact_source = s.text(28);
  j.umask = static_cast<int>(s.i64(29));
  return j;
}

constexpr const char* kAttemptCols =
    "id, job_id, n, state, slots, uuids, reserve_mib, exclusive, recovery, dir, shim_pid, shim_start, "
    "launch_time, start_time, end_time, exit_code, signal, outcome, evidence, peak_mib, out_offset, err_offset, "
    "slot_notice, slot_stop, slot_protocol";

AttemptRow read_attempt(const Stmt& s) {
  AttemptRow a;
  a.id = s.i64(0);
  a.job_id = static_cast<JobId>(s.i64(1));
  a.n = static_cast<int>(s.i64(2));
  a.state = s.text(3);
  a.slots = json::parse(s.text(4)).get<std::vector<int>>();
  a.uuids = json::parse(s.text(5)).get<std::vector<std::string>>();
  a.reserve_mib = s.i64(6);
  a.exclusive = s.i64(7) != 0;
  a.recovery = s.i64(8) != 0;
  a.dir = s.text(9);
  a.shim_pid = s.opt_i64(10);
  a.shim_start = s.opt_i64(11);
  a.launch_time = s.f64(12);
  a.start_time = s.opt_f64(13);
  a.end_time = s.opt_f64(14);
  if (auto v = s.opt_i64(15)) a.exit_code = static_cast<int>(*v);
  if (auto v = s.opt_i64(16)) a.signal = static_cast<int>(*v);
  a.outcome = s.text(17);
  a.evidence = s.text(18);
  a.peak_mib = s.opt_i64(19);
  a.out_offset = s.i64(20);
  a.err_offset = s.i64(21);
  a.slot_notice = s.opt_f64(22);
  a.slot_stop = s.opt_f64(23);
  a.slot_protocol = s.i64(24) != 0;
  return a;
}

}  // namespace

Job JobRow::to_core() const {
  Job j;
  j.id = id;
  j.user = user;
  for (const auto& a : argv) j.command += (j.command.empty() ? "" : " ") + a;
  j.gpus = gpus;
  j.need = need_mib ? MemoryNeed::of(*need_mib, need_source) : MemoryNeed::unknown();
  j.submit_time = submit_time;
  j.attempts = attempts;
  j.state = state;
  j.recovery_need_mib = recovery_need_mib;
  j.recovery_alone = recovery_alone;
  j.checkpoint = checkpoint;
  j.solo_smact = smact;
  return j;
}

Store::Store(const std::string& path) : db_(path) {
  db_.exec(kSchema);
  // Columns added after the first release: a state directory from then gains them in place.
  auto add_column = [&](const char* table, const char* column, const char* decl) {
    bool exists = false;
    auto s = db_.prepare(fmt::format("PRAGMA table_info({})", table));
    while (s.step()) exists |= s.text(1) == column;
    if (!exists) db_.exec(fmt::format("ALTER TABLE {} ADD COLUMN {} {}", table, column, decl));
    return !exists;
  };
  add_column("gpu_samples", "reserved_mib", "INTEGER");
  add_column("jobs", "checkpoint", "INTEGER NOT NULL DEFAULT 0");
  // Queue order: every job's place, set when it is queued (older rows: their id; also after a
  // migration interrupted between adding the column and filling it).
  add_column("jobs", "queue_seq", "INTEGER");
  db_.exec("UPDATE jobs SET queue_seq = id WHERE queue_seq IS NULL");
  add_column("jobs", "smact", "REAL");
  add_column("jobs", "smact_source", "TEXT NOT NULL DEFAULT ''");
  add_column("history", "smact", "REAL");
  add_column("history", "smact_runs", "INTEGER NOT NULL DEFAULT 0");
  add_column("attempts", "slot_notice", "REAL");
  add_column("attempts", "slot_stop", "REAL");
  add_column("attempts", "slot_protocol", "INTEGER NOT NULL DEFAULT 0");
  add_column("jobs", "umask", "INTEGER NOT NULL DEFAULT 18");  // 022: jobs submitted before colo sent the mask
  db_.exec("CREATE INDEX IF NOT EXISTS jobs_queue_seq ON jobs(queue_seq)");
}

JobId Store::insert_job(const JobRow& j) {
  auto s = db_.prepare(
      "INSERT INTO jobs (uid, gid, user, name, argv, env, workdir, gpus, need_mib, need_source, need_explanation, "
      "requested_mib, requested_source, fingerprint, state, submit_time, checkpoint, smact, smact_source, umask, queue_seq) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,(SELECT COALESCE(MAX(queue_seq), 0) + 1 FROM jobs))");
  s.bind(1, j.uid).bind(2, j.gid).bind(3, j.user).bind(4, j.name).bind(5, json(j.argv).dump())
      .bind(6, j.env.dump()).bind(7, j.workdir).bind(8, j.gpus).bind(9, j.need_mib).bind(10, j.need_source)
      .bind(11, j.need_explanation).bind(12, j.requested_mib).bind(13, j.requested_source)
      .bind(14, j.fingerprint).bind(15, std::string(to_string(j.state))).bind(16, j.submit_time)
      .bind(17, j.checkpoint ? 1 : 0).bind(18, j.smact).bind(19, j.smact_source).bind(20, j.umask);
  s.run();
  return static_cast<JobId>(db_.last_insert_id());
}

std::optional<JobRow> Store::job(JobId id) {
  auto s = db_.prepare(fmt::format("SELECT {} FROM jobs WHERE id = ?", kJobCols));
  s.bind(1, static_cast<std::int64_t>(id));
  if (!s.step()) return std::nullopt;
  return read_job(s);
}

std::vector<JobRow> Store::jobs(std::optional<std::int64_t> uid, bool active_only, int limit) {
  std::string sql = fmt::format("SELECT {} FROM jobs WHERE 1", kJobCols);
  if (uid) sql += " AND uid = ?1";
  if (active_only) sql += " AND state NOT IN ('done','failed','cancelled')";
  sql += " ORDER BY id DESC LIMIT ?2";
  auto s = db_.prepare(sql);
  if (uid) s.bind(1, *uid);
  s.bind(2, limit);
  std::vector<JobRow> out;
  while (s.step()) out.push_back(read_job(s));
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<JobRow> Store::recently_finished(int limit) {
  auto s = db_.prepare(fmt::format(
      "SELECT {} FROM jobs WHERE state IN ('done','failed','cancelled') "
      "ORDER BY end_time DESC, id DESC LIMIT ?",  // (a NULL end time sorts last)
      kJobCols));
  s.bind(1, limit);
  std::vector<JobRow> out;
  while (s.step()) out.push_back(read_job(s));
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::pair<JobId, double>> Store::finished_between(std::pair<double, JobId> after, double until, int limit) {
  auto s = db_.prepare(
      "SELECT id, end_time FROM jobs WHERE +state IN ('done','failed','cancelled') AND end_time IS NOT NULL "
      "AND end_time >= ? AND (end_time > ? OR id > ?) AND end_time <= ? ORDER BY end_time, id LIMIT ?");
  // The end_time index, from the watermark on (the plain lower bound), in (end_time, rowid) order:
  // "+state" keeps the planner off the state index, which would visit every finished job and sort.
  s.bind(1, after.first);
  s.bind(2, after.first);
  s.bind(3, static_cast<std::int64_t>(after.second));
  s.bind(4, until);
  s.bind(5, limit);
  std::vector<std::pair<JobId, double>> out;
  while (s.step()) out.emplace_back(static_cast<JobId>(s.i64(0)), s.f64(1));
  return out;
}

std::vector<JobRow> Store::jobs_in_state(JobState st) {
  const char* order = st == JobState::Recovering ? "recovery_seq, id" : "COALESCE(queue_seq, id), id";
  auto s = db_.prepare(fmt::format("SELECT {} FROM jobs WHERE state = ? ORDER BY {}", kJobCols, order));
  s.bind(1, std::string(to_string(st)));
  std::vector<JobRow> out;
  while (s.step()) out.push_back(read_job(s));
  return out;
}

void Store::update_job(const JobRow& j) {
  auto s = db_.prepare(
      "UPDATE jobs SET need_mib=?, need_source=?, need_explanation=?, state=?, end_time=?, attempts=?, "
      "recovery_need_mib=?, recovery_idle_only=?, recovery_seq=?, cancel_requested=?, exit_code=?, reason=?, "
      "checkpoint=? WHERE id=?");
  s.bind(1, j.need_mib).bind(2, j.need_source).bind(3, j.need_explanation)
      .bind(4, std::string(to_string(j.state))).bind(5, j.end_time).bind(6, j.attempts)
      .bind(7, j.recovery_need_mib).bind(8, j.recovery_alone ? 1 : 0).bind(9, j.recovery_seq)
      .bind(10, j.cancel_requested ? 1 : 0);
  if (j.exit_code) s.bind(11, *j.exit_code); else s.bind_null(11);
  s.bind(12, j.reason).bind(13, j.checkpoint ? 1 : 0).bind(14, static_cast<std::int64_t>(j.id));
  s.run();
  if (db_.changes() != 1) throw std::runtime_error(fmt::format("store: job {} vanished", j.id));
}

std::int64_t Store::insert_attempt(const AttemptRow& a) {
  auto s = db_.prepare(
      "INSERT INTO attempts (job_id, n, state, slots, uuids, reserve_mib, exclusive, recovery, dir, launch_time, "
      "out_offset, err_offset, slot_protocol) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)");
  s.bind(1, static_cast<std::int64_t>(a.job_id)).bind(2, a.n).bind(3, a.state).bind(4, json(a.slots).dump())
      .bind(5, json(a.uuids).dump()).bind(6, a.reserve_mib).bind(7, a.exclusive ? 1 : 0)
      .bind(8, a.recovery ? 1 : 0).bind(9, a.dir).bind(10, a.launch_time).bind(11, a.out_offset)
      .bind(12, a.err_offset).bind(13, a.slot_protocol ? 1 : 0);
  s.run();
  return db_.last_insert_id();
}

void Store::update_attempt(const AttemptRow& a) {
  auto s = db_.prepare(
      "UPDATE attempts SET state=?, dir=?, shim_pid=?, shim_start=?, start_time=?, end_time=?, exit_code=?, signal=?, "
      "outcome=?, evidence=?, peak_mib=?, out_offset=?, err_offset=?, slot_notice=?, slot_stop=? WHERE id=?");
  s.bind(1, a.state).bind(2, a.dir).bind(3, a.shim_pid).bind(4, a.shim_start).bind(5, a.start_time)
      .bind(6, a.end_time);
  if (a.exit_code) s.bind(7, *a.exit_code); else s.bind_null(7);
  if (a.signal) s.bind(8, *a.signal); else s.bind_null(8);
  s.bind(9, a.outcome).bind(10, a.evidence).bind(11, a.peak_mib).bind(12, a.out_offset).bind(13, a.err_offset)
      .bind(14, a.slot_notice).bind(15, a.slot_stop).bind(16, a.id);
  s.run();
}

std::vector<AttemptRow> Store::attempts_of(JobId job) {
  auto s = db_.prepare(fmt::format("SELECT {} FROM attempts WHERE job_id = ? ORDER BY id", kAttemptCols));
  s.bind(1, static_cast<std::int64_t>(job));
  std::vector<AttemptRow> out;
  while (s.step()) out.push_back(read_attempt(s));
  return out;
}

std::vector<AttemptRow> Store::open_attempts() {
  auto s = db_.prepare(
      fmt::format("SELECT {} FROM attempts WHERE state IN ('launching','running') ORDER BY id", kAttemptCols));
  std::vector<AttemptRow> out;
  while (s.step()) out.push_back(read_attempt(s));
  return out;
}

std::vector<AttemptRow> Store::attempts_running_at(double t) {
  auto s = db_.prepare(fmt::format(
      "SELECT {} FROM attempts WHERE launch_time <= ? AND (end_time IS NULL OR end_time >= ?) "
      "AND (start_time IS NOT NULL OR state IN ('launching','running')) ORDER BY id",
      kAttemptCols));
  s.bind(1, t);
  s.bind(2, t);
  std::vector<AttemptRow> out;
  while (s.step()) out.push_back(read_attempt(s));
  return out;
}

std::optional<AttemptRow> Store::attempt(std::int64_t id) {
  auto s = db_.prepare(fmt::format("SELECT {} FROM attempts WHERE id = ?", kAttemptCols));
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_attempt(s);
}

void Store::insert_probe(const ProbeRow& p) {
  auto s = db_.prepare("INSERT INTO probes (job_id, request, estimator) VALUES (?,?,?)");
  s.bind(1, static_cast<std::int64_t>(p.job_id)).bind(2, p.request.dump()).bind(3, p.estimator);
  s.run();
}

std::optional<ProbeRow> Store::probe(JobId job) {
  auto s = db_.prepare(
      "SELECT job_id, request, estimator, status, runs, seconds, peak_mib, estimate_mib, detail FROM probes WHERE job_id = ?");
  s.bind(1, static_cast<std::int64_t>(job));
  if (!s.step()) return std::nullopt;
  ProbeRow p;
  p.job_id = static_cast<JobId>(s.i64(0));
  p.request = json::parse(s.text(1));
  p.estimator = s.text(2);
  p.status = s.text(3);
  p.runs = static_cast<int>(s.i64(4));
  p.seconds = s.opt_f64(5);
  p.peak_mib = s.opt_f64(6);
  p.estimate_mib = s.opt_i64(7);
  p.detail = s.text(8);
  return p;
}

void Store::update_probe(const ProbeRow& p) {
  auto s = db_.prepare(
      "UPDATE probes SET status=?, runs=?, seconds=?, peak_mib=?, estimate_mib=?, detail=? WHERE job_id=?");
  s.bind(1, p.status).bind(2, p.runs).bind(3, p.seconds).bind(4, p.peak_mib).bind(5, p.estimate_mib)
      .bind(6, p.detail).bind(7, static_cast<std::int64_t>(p.job_id));
  s.run();
  if (db_.changes() != 1) throw std::runtime_error(fmt::format("store: probe of job {} vanished", p.job_id));
}

void Store::event(std::optional<JobId> job, double time, const std::string& kind, const std::string& message) {
  auto s = db_.prepare("INSERT INTO events (job_id, time, kind, message) VALUES (?,?,?,?)");
  if (job) s.bind(1, static_cast<std::int64_t>(*job)); else s.bind_null(1);
  s.bind(2, time).bind(3, kind).bind(4, message);
  s.run();
}

std::vector<EventRow> Store::events_of(JobId job) {
  auto s = db_.prepare("SELECT time, job_id, kind, message FROM events WHERE job_id = ? ORDER BY id");
  s.bind(1, static_cast<std::int64_t>(job));
  std::vector<EventRow> out;
  while (s.step()) {
    EventRow e;
    e.time = s.f64(0);
    e.job_id = static_cast<JobId>(s.i64(1));
    e.kind = s.text(2);
    e.message = s.text(3);
    out.push_back(std::move(e));
  }
  return out;
}

bool Store::any_waiting() {
  auto s = db_.prepare(
      "SELECT 1 FROM jobs WHERE state IN ('queued', 'recovering') AND cancel_requested = 0 LIMIT 1");
  return s.step();
}

void Store::move_to_back(JobId job) {
  auto s = db_.prepare("UPDATE jobs SET queue_seq = (SELECT COALESCE(MAX(queue_seq), 0) + 1 FROM jobs) WHERE id = ?");
  s.bind(1, static_cast<std::int64_t>(job));
  s.run();
}

std::int64_t Store::next_recovery_seq() {
  db_.exec("INSERT INTO counters (name, value) VALUES ('recovery_seq', 1) "
           "ON CONFLICT(name) DO UPDATE SET value = value + 1");
  auto s = db_.prepare("SELECT value FROM counters WHERE name = 'recovery_seq'");
  s.step();
  return s.i64(0);
}

void Store::set_drained(int slot, const std::string& uuid, bool drained, const std::string& reason) {
  auto s = db_.prepare(
      "INSERT INTO gpu_state (uuid, slot, drained, reason) VALUES (?,?,?,?) "
      "ON CONFLICT(uuid) DO UPDATE SET slot=excluded.slot, drained=excluded.drained, reason=excluded.reason");
  s.bind(1, uuid).bind(2, slot).bind(3, drained ? 1 : 0).bind(4, reason);
  s.run();
}

std::optional<std::string> Store::drained_reason(const std::string& uuid) {
  auto s = db_.prepare("SELECT drained, reason FROM gpu_state WHERE uuid = ?");
  s.bind(1, uuid);
  if (!s.step() || s.i64(0) == 0) return std::nullopt;
  return s.text(1);
}

void Store::add_sample(double time, int slot, MiB used, std::optional<double> smact, std::optional<double> power,
                       std::optional<MiB> reserved) {
  auto s = db_.prepare("INSERT INTO gpu_samples (time, slot, used_mib, smact, power_w, reserved_mib) VALUES (?,?,?,?,?,?)");
  s.bind(1, time).bind(2, slot).bind(3, used).bind(4, smact).bind(5, power).bind(6, reserved);
  s.run();
}

std::vector<GpuSampleRow> Store::samples_since(double since) {
  auto s = db_.prepare(
      "SELECT time, slot, used_mib, reserved_mib, smact, power_w FROM gpu_samples WHERE time >= ? ORDER BY slot, time");
  s.bind(1, since);
  std::vector<GpuSampleRow> out;
  while (s.step())
    out.push_back(GpuSampleRow{s.f64(0), static_cast<int>(s.i64(1)), s.i64(2), s.opt_i64(3), s.opt_f64(4), s.opt_f64(5)});
  return out;
}

void Store::add_job_sample(double time, JobId job, MiB mib) {
  auto s = db_.prepare("INSERT INTO job_samples (time, job_id, mib) VALUES (?,?,?)");
  s.bind(1, time).bind(2, static_cast<std::int64_t>(job)).bind(3, mib);
  s.run();
}

std::vector<std::pair<double, MiB>> Store::job_samples(JobId job) {
  auto s = db_.prepare("SELECT time, mib FROM job_samples WHERE job_id = ? ORDER BY time");
  s.bind(1, static_cast<std::int64_t>(job));
  std::vector<std::pair<double, MiB>> out;
  while (s.step()) out.emplace_back(s.f64(0), s.i64(1));
  return out;
}

void Store::prune_samples(double older_than) {
  for (const char* sql : {"DELETE FROM gpu_samples WHERE time < ?", "DELETE FROM job_samples WHERE time < ?"}) {
    auto s = db_.prepare(sql);
    s.bind(1, older_than);
    s.run();
  }
}

StoreTotals Store::totals() {
  StoreTotals t;
  {
    auto s = db_.prepare("SELECT state, COUNT(*) FROM jobs GROUP BY state");
    while (s.step()) t.jobs_by_state[s.text(0)] = s.i64(1);
  }
  {
    auto s = db_.prepare(
        "SELECT MIN(submit_time), COUNT(*) FROM jobs WHERE state IN ('queued','recovering','estimating')");
    if (s.step()) {
      t.oldest_waiting_submit = s.opt_f64(0);
      t.waiting = s.i64(1);
    }
  }
  {
    auto s = db_.prepare("SELECT COUNT(*) FROM attempts WHERE outcome = 'oom'");
    if (s.step()) t.oom_attempts = s.i64(0);
  }
  {
    auto s = db_.prepare(
        "SELECT COUNT(*) FROM jobs WHERE state = 'done' AND id IN (SELECT job_id FROM attempts WHERE outcome = 'oom')");
    if (s.step()) t.recovered_jobs = s.i64(0);
  }
  {
    auto s = db_.prepare(
        "SELECT COALESCE(SUM(outcome = 'checkpointed'), 0), COALESCE(SUM(outcome = 'preempted'), 0) FROM attempts "
        "WHERE outcome IN ('checkpointed', 'preempted')");
    if (s.step()) {
      t.slot_ends_checkpointed = s.i64(0);
      t.slot_ends_preempted = s.i64(1);
    }
  }
  return t;
}

std::vector<EstimateOutcome> Store::estimate_outcomes(int limit) {
  auto s = db_.prepare(
      "SELECT j.id, j.need_source, j.need_mib, MAX(a.peak_mib) FROM jobs j JOIN attempts a ON a.job_id = j.id "
      "WHERE j.state = 'done' AND j.need_mib IS NOT NULL AND a.peak_mib IS NOT NULL AND a.peak_mib > 0 "
      "GROUP BY j.id ORDER BY j.id DESC LIMIT ?");
  s.bind(1, limit);
  std::vector<EstimateOutcome> out;
  while (s.step()) out.push_back(EstimateOutcome{static_cast<JobId>(s.i64(0)), s.text(1), s.i64(2), s.i64(3)});
  return out;
}

int Store::overtakes_of(JobId head) {
  auto s = db_.prepare("SELECT COUNT(*) FROM events WHERE kind = 'placed' AND message LIKE ?");
  s.bind(1, "% [backfilled ahead of waiting job " + std::to_string(head) + "]%");
  return s.step() ? static_cast<int>(s.i64(0)) : 0;
}

std::vector<EventRow> Store::recent_events(int limit) {
  auto s = db_.prepare("SELECT time, job_id, kind, message FROM events ORDER BY id DESC LIMIT ?");
  s.bind(1, limit);
  std::vector<EventRow> out;
  while (s.step()) {
    EventRow e;
    e.time = s.f64(0);
    if (auto j = s.opt_i64(1)) e.job_id = static_cast<JobId>(*j);
    e.kind = s.text(2);
    e.message = s.text(3);
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<MiB> Store::history_peak(const std::string& fingerprint) {
  auto s = db_.prepare("SELECT peak_mib FROM history WHERE fingerprint = ?");
  s.bind(1, fingerprint);
  if (!s.step()) return std::nullopt;
  return s.i64(0);
}

std::optional<double> Store::history_smact(const std::string& fingerprint) {
  auto s = db_.prepare("SELECT smact FROM history WHERE fingerprint = ? AND smact_runs > 0");
  s.bind(1, fingerprint);
  if (!s.step()) return std::nullopt;
  return s.opt_f64(0);
}

void Store::record_history_smact(const std::string& fingerprint, double smact, double time) {
  // The mean over the solo runs seen so far (a row may exist for the peak alone).
  auto s = db_.prepare(
      "INSERT INTO history (fingerprint, peak_mib, runs, last_time, smact, smact_runs) VALUES (?,0,0,?,?,1) "
      "ON CONFLICT(fingerprint) DO UPDATE SET smact = (COALESCE(smact, 0) * smact_runs + excluded.smact) / "
      "(smact_runs + 1), smact_runs = smact_runs + 1, last_time = excluded.last_time");
  s.bind(1, fingerprint).bind(2, time).bind(3, smact);
  s.run();
}

void Store::record_history(const std::string& fingerprint, MiB peak, double time) {
  auto s = db_.prepare(
      "INSERT INTO history (fingerprint, peak_mib, runs, last_time) VALUES (?,?,1,?) "
      "ON CONFLICT(fingerprint) DO UPDATE SET peak_mib = max(peak_mib, excluded.peak_mib), runs = runs + 1, "
      "last_time = excluded.last_time");
  s.bind(1, fingerprint).bind(2, peak).bind(3, time);
  s.run();
}

}  // namespace colo::daemon
