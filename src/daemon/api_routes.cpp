// colod's HTTP/JSON API (docs/DAEMON.md lists the routes). Every handler authorises with the
// peer's kernel-given uid: users see and touch only their own jobs; root (and the daemon's own
// uid) sees everything and may drain GPUs.
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <fmt/format.h>
#include <pwd.h>

#include "common/base64.h"
#include "core/error.h"
#include "core/one_line.h"
#include "daemon/client/job_request.h"
#include "daemon/daemon.h"
#include "daemon/http_reply.h"

namespace colo::daemon {

using nlohmann::json;

namespace {

HttpResponse reply(int status, const json& body) { return json_reply(status, body); }
HttpResponse error(int status, const std::string& msg) { return json_error(status, msg); }

bool is_admin(const Peer& p) { return p.uid == 0 || p.uid == geteuid(); }

std::optional<JobId> parse_id(std::string_view s) {
  JobId v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || v == 0) return std::nullopt;
  return v;
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) parts.push_back(path.substr(i, j - i));
    i = j;
  }
  return parts;
}

std::string user_name(uid_t uid) {
  if (passwd* pw = getpwuid(uid)) return pw->pw_name;
  return std::to_string(uid);
}

}  // namespace

HttpResponse Daemon::handle(const HttpRequest& req, const Peer& peer) {
  try {
    return route(req, peer);
  } catch (const UserError& e) {
    return error(400, e.what());
  } catch (const StorageFull& e) {
    // The transaction rolled back: the client may simply try again later.
    log(fmt::format("colod: {} {}: {}", req.method, req.path, e.what()));
    return error(507, fmt::format("colod cannot record it: the disk of its state directory {} is full ({}); nothing "
                                  "was changed, try again once there is room",
                                  cfg_.state_dir, e.what()));
  }
}

HttpResponse Daemon::route(const HttpRequest& req, const Peer& peer) {
  const std::vector<std::string> p = split_path(req.path);
  const std::string& m = req.method;
  // A query parameter a route does not read is a mistake to report, not to ignore.
  const bool listing = p.size() == 2 && p[0] == "v1" && p[1] == "jobs" && m == "GET";
  const bool logs = p.size() == 4 && p[0] == "v1" && p[1] == "jobs" && p[3] == "logs";
  for (const auto& [key, value] : req.query) {
    const bool known = (listing && key == "all") ||
                       (logs && (key == "stream" || key == "offset" || key == "max" || key == "encoding"));
    if (!known) return error(400, fmt::format("unknown query parameter '{}' for {} {}", one_line(key), m, one_line(req.path)));
  }
  if (listing && req.query.count("all")) {
    const std::string& v = req.query.at("all");
    if (v != "0" && v != "1" && v != "true" && v != "false") return error(400, "query 'all' must be 0, 1, true or false");
  }
  auto method_not_allowed = [&](const char* allowed) {
    return error(405, fmt::format("{} is not allowed on {} (use {})", m, req.path, allowed));
  };
  if (p.size() < 2 || p[0] != "v1") return error(404, fmt::format("unknown route '{}'", req.path));
  if (p.size() == 2 && p[1] == "status") return m == "GET" ? status(peer) : method_not_allowed("GET");
  if (p[1] == "jobs") {
    if (p.size() == 2) {
      if (m == "GET") return list_jobs(req, peer);
      if (m == "POST") return submit(req, peer);
      return method_not_allowed("GET or POST");
    }
    auto id = parse_id(p[2]);
    if (!id) return error(400, fmt::format("'{}' is not a job id", p[2]));
    if (p.size() == 3) return m == "GET" ? show_job(*id, peer) : method_not_allowed("GET");
    if (p.size() == 4 && p[3] == "cancel") return m == "POST" ? cancel_job(*id, peer) : method_not_allowed("POST");
    if (p.size() == 4 && p[3] == "logs") return m == "GET" ? job_logs(*id, req, peer) : method_not_allowed("GET");
  }
  if (p[1] == "gpus") {
    if (p.size() == 2) return m == "GET" ? list_gpus(peer) : method_not_allowed("GET");
    if (p.size() == 4 && (p[3] == "drain" || p[3] == "resume"))
      return m == "POST" ? drain_gpu(p[2], p[3] == "drain", req, peer) : method_not_allowed("POST");
  }
  return error(404, fmt::format("unknown route '{}'", req.path));
}

std::optional<JobRow> Daemon::visible_job(JobId id, const Peer& peer) {
  auto j = store_.job(id);
  if (!j || (!is_admin(peer) && j->uid != static_cast<std::int64_t>(peer.uid))) return std::nullopt;
  return j;
}

json Daemon::job_json(const JobRow& j, bool detail) {
  json o;
  o["id"] = j.id;
  o["name"] = j.name;
  o["user"] = j.user;
  o["uid"] = j.uid;
  o["state"] = std::string(to_string(j.state));
  o["gpus_requested"] = j.gpus;
  o["need_mib"] = j.need_mib ? json(*j.need_mib) : json(nullptr);
  o["need_source"] = j.need_source;
  o["submit_time"] = j.submit_time;
  o["end_time"] = j.end_time ? json(*j.end_time) : json(nullptr);
  o["attempt_count"] = j.attempts;
  o["exit_code"] = j.exit_code ? json(*j.exit_code) : json(nullptr);
  o["reason"] = j.reason;
  o["cancel_requested"] = j.cancel_requested;
  // Why a queued or recovering job is not running (latest scheduling round); null otherwise.
  if (j.state == JobState::Queued || j.state == JobState::Recovering) {
    auto w = waiting_.find(j.id);
    o["waiting_reason"] = j.cancel_requested ? std::string("cancel requested")
                          : w != waiting_.end() ? w->second
                                                : std::string("not yet considered by the scheduler");
  } else if (j.state == JobState::Estimating) {
    const auto p = probes_.find(j.id);
    o["waiting_reason"] = p == probes_.end()     ? "estimating: waiting for a probe slot"
                          : p->second->reaped() ? "estimating: reading the probe's trace"
                                                : "estimating: the probe is running";
  } else {
    o["waiting_reason"] = nullptr;
  }
  const std::vector<AttemptRow> attempts = store_.attempts_of(j.id);
  json gpus = json::array();
  if (!attempts.empty()) {
    const AttemptRow& last = attempts.back();
    for (size_t k = 0; k < last.slots.size(); ++k)
      gpus.push_back({{"index", last.slots[k]}, {"uuid", k < last.uuids.size() ? last.uuids[k] : ""}});
  }
  o["gpus"] = gpus;  // GPUs of the latest attempt (empty until placed)
  o["checkpoint"] = j.checkpoint;  // time slots apply to it
  o["smact"] = j.smact ? json(*j.smact) : json(nullptr);  // predicted solo SM activity
  o["smact_source"] = j.smact_source;
  if (!detail) return o;
  o["argv"] = j.argv;
  o["workdir"] = j.workdir;
  o["env"] = j.env;
  o["need_explanation"] = j.need_explanation;
  if (auto p = store_.probe(j.id)) {
    o["probe"] = {{"request", p->request}, {"estimator", p->estimator}, {"status", p->status}, {"runs", p->runs},
                  {"seconds", p->seconds ? json(*p->seconds) : json(nullptr)},
                  {"peak_mib", p->peak_mib ? json(*p->peak_mib) : json(nullptr)},
                  {"estimate_mib", p->estimate_mib ? json(*p->estimate_mib) : json(nullptr)},
                  {"detail", p->detail}};
  } else {
    o["probe"] = nullptr;
  }
  o["requested_mib"] = j.requested_mib ? json(*j.requested_mib) : json(nullptr);
  o["requested_source"] = j.requested_source;
  o["fingerprint"] = j.fingerprint;
  o["recovery"] = {{"need_mib", j.recovery_need_mib ? json(*j.recovery_need_mib) : json(nullptr)},
                   {"idle_only", j.recovery_alone}};
  o["stdout"] = log_path(j.id, "stdout");
  o["stderr"] = log_path(j.id, "stderr");
  const auto removed = job_files_removed(j);  // the paths above are gone (jobs.keep_logs_days)
  o["files_removed"] = removed ? json(*removed) : json(nullptr);
  json aj = json::array();
  for (const AttemptRow& a : attempts) {
    json x{{"n", a.n}, {"state", a.state}, {"outcome", a.outcome}, {"gpus", a.slots}, {"uuids", a.uuids},
           {"reserve_mib", a.reserve_mib}, {"exclusive", a.exclusive}, {"recovery", a.recovery},
           {"launch_time", a.launch_time}, {"evidence", a.evidence}};
    x["start_time"] = a.start_time ? json(*a.start_time) : json(nullptr);
    x["end_time"] = a.end_time ? json(*a.end_time) : json(nullptr);
    x["exit_code"] = a.exit_code ? json(*a.exit_code) : json(nullptr);
    x["signal"] = a.signal ? json(*a.signal) : json(nullptr);
    x["slot_notice"] = a.slot_notice ? json(*a.slot_notice) : json(nullptr);
    x["slot_stop"] = a.slot_stop ? json(*a.slot_stop) : json(nullptr);
    MiB peak = a.peak_mib.value_or(0);
    if (auto it = live_.find(a.id); it != live_.end()) peak = std::max(peak, it->second.peak_mib);
    x["peak_mib"] = peak > 0 ? json(peak) : json(nullptr);
    aj.push_back(std::move(x));
  }
  o["attempts"] = aj;
  json ev = json::array();
  for (const EventRow& e : store_.events_of(j.id)) ev.push_back({{"time", e.time}, {"kind", e.kind}, {"message", e.message}});
  o["events"] = ev;
  return o;
}

HttpResponse Daemon::submit(const HttpRequest& req, const Peer& peer) {
  if (geteuid() != 0 && peer.uid != geteuid())
    return error(403, fmt::format("colod runs as uid {} (not root) and can only run jobs for that user", geteuid()));
  if (auto deep = json_depth_error(req.body, kMaxJsonNesting)) return error(400, "request body: " + *deep);
  const json body = parse_request_body(req.body);
  if (body.is_discarded()) return error(400, "request body is not valid JSON");
  SubmitRequest r = submit_request_from_json(body);
  if (r.workdir.empty()) {
    if (passwd* pw = getpwuid(peer.uid)) r.workdir = pw->pw_dir;
    else r.workdir = "/";
  }
  JobRow j;
  j.uid = peer.uid;
  j.gid = peer.gid;
  j.user = user_name(peer.uid);
  if (passwd* pw = getpwuid(peer.uid)) j.gid = pw->pw_gid;
  j.name = r.name;
  j.argv = r.argv;
  j.env = r.env;
  j.workdir = r.workdir;
  j.gpus = r.gpus;
  j.checkpoint = r.checkpoint;
  j.umask = r.umask.value_or(022);
  j.smact = r.smact;
  j.smact_source = r.smact ? (r.smact_source.empty() ? "user" : r.smact_source) : "";
  j.requested_mib = r.mem_mib;
  j.requested_source = r.mem_mib ? (r.mem_source.empty() ? "user" : r.mem_source) : "";
  json inputs = r.fingerprint_inputs;
  if (r.mem_mib && !inputs.contains("stated_mib")) inputs["stated_mib"] = *r.mem_mib;
  j.fingerprint = job_fingerprint(j.uid, j.workdir, r.argv, r.gpus, inputs);
  j.need_mib = r.mem_mib;
  j.need_source = j.requested_source;
  j.need_explanation = r.mem_explanation;
  if (cfg_.history) {
    if (auto h = history_.estimate(j.fingerprint)) {
      j.need_mib = *h;
      j.need_source = "history";
      j.need_explanation = fmt::format("observed peak of earlier runs of this job + {:.0f}%{}", cfg_.history_margin * 100,
                                       r.mem_mib ? fmt::format(" (submitted with {})", format_mib(*r.mem_mib)) : "");
    }
  }
  if (cfg_.history) {
    if (auto h = history_.smact(j.fingerprint)) {  // measured beats predicted
      j.smact = *h;
      j.smact_source = "history";
    }
  }
  // A probed job waits in estimating until colod's probe answers, unless the history of the same
  // job already knows its peak (then the probe would only repeat what was measured).
  const bool probe = r.probe && j.need_source != "history";
  j.state = probe ? JobState::Estimating : JobState::Queued;
  j.submit_time = now();
  JobId id = 0;
  {
    Txn txn(store_.db());
    id = store_.insert_job(j);
    if (probe) {
      ProbeRow p;
      p.job_id = id;
      p.request = r.probe->to_json();
      p.estimator = r.probe_estimator;
      store_.insert_probe(p);
      probes_pending_ = true;
    }
    store_.event(id, j.submit_time, "submitted",
                 fmt::format("by {} (uid {}), need {}", j.user, j.uid,
                             j.need_mib ? format_mib(*j.need_mib) + " [" + j.need_source + "]"
                             : probe    ? std::string("to be estimated by the probe")
                                        : std::string("unknown")));
    txn.commit();
  }
  // Recorded: the answer is 201 whatever happens now (an error would have the client submit it
  // again). The probe and the launch make the directory themselves if this cannot.
  std::error_code mkdir_ec;
  std::filesystem::create_directories(job_dir(id), mkdir_ec);
  dirty_ = true;
  auto stored = store_.job(id);
  return reply(201, job_json(*stored, false));
}

HttpResponse Daemon::list_jobs(const HttpRequest& req, const Peer& peer) {
  const bool all = req.query.count("all") && (req.query.at("all") == "1" || req.query.at("all") == "true");
  std::optional<std::int64_t> uid;
  if (!is_admin(peer)) uid = peer.uid;
  json out = json::array();
  for (const JobRow& j : store_.jobs(uid, !all, all ? 1000 : 10000)) out.push_back(job_json(j, false));
  return reply(200, out);
}

HttpResponse Daemon::show_job(JobId id, const Peer& peer) {
  auto j = visible_job(id, peer);
  if (!j) return error(404, fmt::format("job {} not found", id));
  return reply(200, job_json(*j, true));
}

HttpResponse Daemon::cancel_job(JobId id, const Peer& peer) {
  auto jr = visible_job(id, peer);
  if (!jr) return error(404, fmt::format("job {} not found", id));
  JobRow j = *jr;
  if (is_terminal(j.state)) return error(409, fmt::format("job {} already ended ({})", id, to_string(j.state)));
  const double t = now();
  {
    Txn txn(store_.db());
    j.cancel_requested = true;
    // Not started yet: cancelled at once. Placed/running: the shim stops it (SIGTERM, then
    // SIGKILL after the grace period) and finalize() records the cancellation.
    if (j.state == JobState::Queued || j.state == JobState::Recovering || j.state == JobState::Oom ||
        j.state == JobState::Estimating) {
      Job c = j.to_core();
      transition(c, JobState::Cancelled);
      j.state = c.state;
      j.end_time = t;
      j.reason = "cancelled";
    }
    store_.update_job(j);
    store_.event(id, t, "cancel", fmt::format("requested by {} (uid {})", user_name(peer.uid), peer.uid));
    txn.commit();
  }
  for (auto& [aid, l] : live_)
    if (l.attempt.job_id == id) request_cancel_signal(l);
  if (auto p = probes_.find(id); p != probes_.end()) p->second->kill();  // its exit is collected as usual
  dirty_ = true;
  return reply(200, job_json(*store_.job(id), false));
}

HttpResponse Daemon::job_logs(JobId id, const HttpRequest& req, const Peer& peer) {
  auto j = visible_job(id, peer);
  if (!j) return error(404, fmt::format("job {} not found", id));
  std::string stream = "stdout";
  if (req.query.count("stream")) stream = req.query.at("stream");
  if (stream != "stdout" && stream != "stderr") return error(400, "query 'stream' must be stdout or stderr");
  // text: a JSON string (bytes that are not UTF-8 show as U+FFFD; a chunk never splits a
  // character); base64: the bytes exactly.
  std::string encoding = "text";
  if (req.query.count("encoding")) encoding = req.query.at("encoding");
  if (encoding != "text" && encoding != "base64") return error(400, "query 'encoding' must be text or base64");
  std::int64_t offset = 0, max = 1 << 20;
  auto num = [&](const char* key, std::int64_t& v) -> bool {
    if (!req.query.count(key)) return true;
    const std::string& s = req.query.at(key);
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && ptr == s.data() + s.size() && v >= 0;
  };
  if (!num("offset", offset)) return error(400, "query 'offset' must be a non-negative integer");
  if (!num("max", max) || max == 0) return error(400, "query 'max' must be a positive integer");
  max = std::min<std::int64_t>(max, 1 << 20);
  if (const auto removed = job_files_removed(*j)) return error(410, fmt::format("job {}: {}", id, *removed));
  const std::string path = log_path(id, stream);
  std::string data;
  std::int64_t size = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    // An empty answer would pass a directory removed by hand off as a job that printed nothing.
    // A started attempt's job has its directory (made before the shim), and once the job ended,
    // both logs (the shim makes them just after it records the start, before the command runs).
    std::error_code dir_ec, ec;
    const auto attempts = store_.attempts_of(id);
    const bool started = std::any_of(attempts.begin(), attempts.end(), [](const AttemptRow& a) { return a.start_time.has_value(); });
    const bool dir_gone = !std::filesystem::exists(job_dir(id), dir_ec) && !dir_ec;
    if (started && (dir_gone || is_terminal(j->state)) && !std::filesystem::exists(path, ec) && !ec)
      return error(410, fmt::format("job {}: its {} log {} is missing: removed outside colod, or never created (see colo show {})",
                                    id, stream, path, id));
  }
  if (in) {
    in.seekg(0, std::ios::end);
    size = in.tellg();
    if (offset < size) {
      in.seekg(offset);
      data.resize(static_cast<size_t>(std::min(max, size - offset)));
      in.read(data.data(), static_cast<std::streamsize>(data.size()));
      data.resize(static_cast<size_t>(in.gcount()));
    }
  }
  if (encoding == "text" && offset + static_cast<std::int64_t>(data.size()) < size) {
    // Stop before a character the chunk would cut (the next chunk starts at its lead byte).
    std::size_t keep = data.size();
    for (std::size_t back = 1; back <= 3 && back <= data.size(); ++back) {
      const auto c = static_cast<unsigned char>(data[data.size() - back]);
      if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
      const std::size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      if (len > back) keep = data.size() - back;
      break;
    }
    if (keep > 0) data.resize(keep);  // a lone fragment is sent as it is (it cannot be completed)
  }
  const std::int64_t next = offset + static_cast<std::int64_t>(data.size());
  return reply(200, json{{"data", encoding == "base64" ? base64_encode(data) : data}, {"encoding", encoding},
                         {"offset", next}, {"size", size}, {"state", std::string(to_string(j->state))},
                         {"finished", is_terminal(j->state)}});
}

HttpResponse Daemon::list_gpus(const Peer& peer) {
  (void)peer;  // GPU state is not private
  json out = json::array();
  for (const GpuSlot& s : monitor_.slots()) {
    json g{{"index", s.slot}, {"nvml_index", s.nvml_index}, {"uuid", s.uuid}, {"name", s.name},
           {"total_mib", s.total_mib}, {"used_mib", s.used_mib}, {"healthy", s.healthy}, {"error", s.error},
           {"reserved_mib", ledger_.reserved_on(s.slot)}, {"available_mib", ledger_.available(monitor_.snapshot(s))},
           {"smact_path", gpu::to_string(s.smact_path)}};
    g["mig_index"] = s.mig_index >= 0 ? json(s.mig_index) : json(nullptr);
    const auto avg = s.window.smact_average();
    g["smact"] = avg ? json(*avg) : json(nullptr);
    g["power_w"] = s.power_w ? json(*s.power_w) : json(nullptr);
    // Out of scheduling: drained by an operator (persisted, `colo resume` lifts it) and/or
    // unhealthy (never persisted; the monitor re-probes it and lifts it by itself).
    const auto admin = drained_.find(s.uuid);
    g["drained"] = admin != drained_.end() || !s.healthy;
    g["drain_reason"] = admin != drained_.end() ? admin->second : !s.healthy ? "unhealthy: " + s.health_reason : "";
    g["drain_kind"] = admin != drained_.end() ? (s.healthy ? "admin" : "admin+health") : !s.healthy ? "health" : "";
    g["admin_drained"] = admin != drained_.end();
    g["health_reason"] = s.health_reason;
    g["identity_known"] = s.identity_known();
    g["consecutive_failures"] = s.consecutive_failures;
    g["recovery_good_samples"] = s.good_samples;
    g["next_probe_in_s"] = s.next_probe ? json(std::max(0.0, *s.next_probe - now())) : json(nullptr);
    g["metric_errors"] = s.metric_errors;  // optional metrics unknown in the latest sample: field -> error
    g["metric_error_counts"] = s.metric_error_counts;
    g["mps"] = s.mig_index < 0 && mps_.count(s.nvml_index) > 0;
    json jobs = json::array();
    for (const auto& [aid, l] : live_)
      if (std::find(l.attempt.slots.begin(), l.attempt.slots.end(), s.slot) != l.attempt.slots.end())
        jobs.push_back(l.attempt.job_id);
    g["jobs"] = jobs;
    out.push_back(std::move(g));
  }
  return reply(200, out);
}

HttpResponse Daemon::drain_gpu(const std::string& key, bool drain, const HttpRequest& req, const Peer& peer) {
  if (!is_admin(peer)) return error(403, "only root (or colod's own user) may drain or resume GPUs");
  GpuSlot* s = monitor_.find(key);
  if (!s) return error(404, fmt::format("no managed GPU '{}'", key));
  std::string reason = drain ? fmt::format("drained by {}", user_name(peer.uid)) : "";
  if (!req.body.empty()) {
    if (auto deep = json_depth_error(req.body, kMaxJsonNesting)) return error(400, "request body: " + *deep);
    const json b = parse_request_body(req.body);
    if (b.is_discarded() || !b.is_object()) return error(400, "request body is not a JSON object");
    for (const auto& [k, v] : b.items()) {
      if (k != "reason") return error(400, fmt::format("unknown field '{}'", k));
      if (!v.is_string()) return error(400, "field 'reason': expected a string");
      if (!drain) return error(400, "field 'reason': only a drain takes a reason");
      reason = v.get<std::string>();
      if (reason.size() > 500) return error(400, "field 'reason': longer than 500 bytes");
      if (const std::string c = control_char_in(reason); !c.empty())
        return error(400, fmt::format("field 'reason': contains a control character ({})", c));
    }
  }
  if (!drain && !s->healthy && !drained_.count(s->uuid))
    return error(409, fmt::format("GPU {} is unhealthy ({}); nothing to resume: it returns by itself once it answers "
                                  "again{}",
                                  s->slot, s->health_reason,
                                  s->next_probe ? fmt::format(" (next probe in {:.0f} s)", std::max(0.0, *s->next_probe - now()))
                                                : std::string()));
  if (!drain && !drained_.count(s->uuid)) return error(409, fmt::format("GPU {} is not drained: nothing to resume", s->slot));
  {
    Txn txn(store_.db());
    store_.set_drained(s->slot, s->uuid, drain, reason);
    store_.event(std::nullopt, now(), "gpu", fmt::format("GPU {} {} by {}", s->slot, drain ? "drained" : "resumed", user_name(peer.uid)));
    txn.commit();
  }
  if (drain) drained_[s->uuid] = reason;
  else drained_.erase(s->uuid);
  dirty_ = true;
  return reply(200, json{{"index", s->slot}, {"uuid", s->uuid}, {"drained", drain}, {"reason", reason}});
}

HttpResponse Daemon::status(const Peer& peer) {
  json o{{"policy", scheduler_.config().policy.describe()},
         {"recovery", std::string(to_string(cfg_.recovery.mode))},
         {"sharing", cfg_.sharing == Sharing::Mps ? "mps" : "streams"},
         {"backend", monitor_.describe()},
         {"smact_available", monitor_.smact_available()},
         {"running_attempts", live_.size()},
         {"slots", cfg_.slots.enabled() ? json{{"length_s", cfg_.slots.slot_s}, {"notice_s", cfg_.slots.notice_s},
                                                {"signal", checkpoint_signal_name(cfg_.checkpoint_signal)}}
                                         : json(nullptr)},
         {"you", {{"uid", peer.uid}, {"user", user_name(peer.uid)}, {"admin", is_admin(peer)}}}};
  return reply(200, o);
}

}  // namespace colo::daemon
