// colod's web listener (TCP, read-only): /metrics, the dashboard's files, and the JSON it polls
// (docs/DASHBOARD.md). A TCP peer has no kernel-given identity, so it is anonymous: it sees GPU
// data and each job's state, size and waits, but job names, users and job pages only when the
// admin sets [web] public_job_details (the Unix-socket API shows a user their own jobs).
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <fmt/format.h>

#include <arpa/inet.h>

#include "common/resource_path.h"
#include "core/error.h"
#include "core/one_line.h"
#include "daemon/daemon.h"
#include "daemon/http_reply.h"
#include "daemon/prometheus_text.h"

namespace colo::daemon {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::size_t kMaxAssetBytes = 8u << 20;
constexpr double kDefaultSamplesWindow = 15 * 60;

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json opt(const std::optional<MiB>& v) { return v ? json(*v) : json(nullptr); }

const char* content_type_of(const fs::path& p) {
  const std::string e = p.extension().string();
  if (e == ".html") return "text/html; charset=utf-8";
  if (e == ".js") return "text/javascript; charset=utf-8";
  if (e == ".css") return "text/css; charset=utf-8";
  if (e == ".json") return "application/json";
  if (e == ".png") return "image/png";
  if (e == ".svg") return "image/svg+xml";
  return "text/plain; charset=utf-8";  // LICENSE, VERSION, .txt
}

// Only plain relative names below static/: letters, digits, '.', '-', '_' and '/', no "..", no
// hidden files. Anything else is a 404, never a path outside the assets.
bool safe_asset_name(const std::string& rel) {
  if (rel.empty() || rel.size() > 200 || rel.front() == '/') return false;
  for (char c : rel)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_' && c != '/') return false;
  std::stringstream ss(rel);
  for (std::string part; std::getline(ss, part, '/');)
    if (part.empty() || part.front() == '.') return false;
  return true;
}

HttpResponse with_web_headers(HttpResponse r, bool cache) {
  r.headers["X-Content-Type-Options"] = "nosniff";
  r.headers["Cache-Control"] = cache ? "max-age=300" : "no-store";
  r.headers["Content-Security-Policy"] =
      "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'";
  r.headers["Referrer-Policy"] = "no-referrer";
  return r;
}

}  // namespace

std::string Daemon::web_assets_dir() const {
  return cfg_.web_assets.empty() ? resource_path("COLO_WEB", "web", "") : cfg_.web_assets;
}

HttpResponse Daemon::serve_asset(const std::string& rel) {
  if (!safe_asset_name(rel)) return json_error(404, "no such file");
  const fs::path p = fs::path(web_assets_dir()) / rel;
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return json_error(404, fmt::format("no such file '{}'", rel));
  const auto size = fs::file_size(p, ec);
  if (ec || size > kMaxAssetBytes) return json_error(500, fmt::format("'{}' cannot be served", rel));
  std::ifstream in(p, std::ios::binary);
  std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return HttpResponse{200, content_type_of(p), std::move(body), {}};
}

namespace {

// The host name of a Host header ("localhost:9400" → "localhost", "[::1]:9400" → "::1").
std::string host_name(const std::string& host) {
  if (!host.empty() && host.front() == '[') {
    const auto close = host.find(']');
    return close == std::string::npos ? host : host.substr(1, close - 1);
  }
  return host.substr(0, host.find(':'));
}

}  // namespace

HttpResponse Daemon::web(const HttpRequest& req, const Peer& peer) {
  const std::string& p = req.path;
  HttpResponse r = [&]() -> HttpResponse {
    try {
      // DNS rebinding: a page on attacker.example, rebound to 127.0.0.1, would read a loopback
      // listener as its own origin. Browsers always send the name they resolved; a loopback
      // listener answers only to loopback names (ssh -L forwards keep "localhost").
      if (web_loopback_) {
        if (const auto h = req.headers.find("host"); h != req.headers.end()) {
          const std::string name = host_name(h->second);
          in_addr v4{};  // a literal 127.x.y.z; a name that merely starts with "127." is not one
          const bool loopback_v4 = ::inet_pton(AF_INET, name.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
          if (name != "localhost" && name != "::1" && !loopback_v4)
            return json_error(403, fmt::format("host '{}' is not this listener's (a loopback listener answers to "
                                               "localhost, 127.0.0.1 or [::1])",
                                               one_line(h->second.substr(0, 100))));
        }
      }
      if (req.method != "GET" && req.method != "HEAD")
        return json_error(405, fmt::format("{} is not allowed (the web listener is read-only: GET)", req.method));
      if (p == "/metrics") {
        bool dcgm = false;
        if (auto it = req.query.find("labels"); it != req.query.end()) {
          if (it->second != "dcgm")
            return json_error(400, fmt::format("query 'labels' must be 'dcgm', not '{}'", one_line(it->second)));
          dcgm = true;
        }
        return HttpResponse{200, kPrometheusContentType, metrics_text(dcgm), {}};
      }
      if (p == "/" || p == "/index.html") return serve_asset("index.html");
      if (p.rfind("/static/", 0) == 0) return serve_asset("static/" + p.substr(8));
      if (p == "/api/v1/overview") return web_overview(peer);
      if (p == "/api/v1/gpu-samples") return web_gpu_samples(req);
      if (p.rfind("/api/v1/jobs/", 0) == 0) return web_job(p.substr(13), peer);
      return json_error(404, fmt::format("unknown path '{}'", one_line(p)));
    } catch (const UserError& e) {
      return json_error(400, e.what());
    }
  }();
  // Every answer carries the security headers (errors included); only assets are cached.
  const bool asset = p == "/" || p == "/index.html" || p.rfind("/static/", 0) == 0;
  r = with_web_headers(std::move(r), asset && r.status == 200);
  if (r.status == 405) r.headers["Allow"] = "GET, HEAD";
  return r;
}

std::map<std::string, std::string> web_security_headers() { return with_web_headers(HttpResponse{}, false).headers; }

bool Daemon::web_shows_details(const Peer& peer) const { return !peer.anonymous || cfg_.web_public_job_details; }

json Daemon::web_job_summary(const JobRow& j, bool details) {
  const std::vector<AttemptRow> attempts = store_.attempts_of(j.id);
  json o;
  o["id"] = j.id;
  o["name"] = details ? json(j.name) : json(nullptr);
  o["user"] = details ? json(j.user) : json(nullptr);
  o["state"] = std::string(to_string(j.state));
  o["need_mib"] = opt(j.need_mib);
  o["need_source"] = j.need_source;
  o["submit_time"] = j.submit_time;
  o["end_time"] = opt(j.end_time);
  o["attempts"] = j.attempts;
  json gpus = json::array();
  std::optional<double> start;
  std::optional<MiB> peak;
  if (!attempts.empty()) {
    for (int s : attempts.back().slots) gpus.push_back(s);
    for (const AttemptRow& a : attempts) {
      if (!start && a.start_time) start = a.start_time;
      if (a.peak_mib) peak = std::max(peak.value_or(0), *a.peak_mib);
    }
  }
  for (const auto& [aid, l] : live_)
    if (l.attempt.job_id == j.id && l.peak_mib > 0) peak = std::max(peak.value_or(0), l.peak_mib);
  o["gpus"] = gpus;
  o["start_time"] = opt(start);
  o["peak_mib"] = opt(peak);
  // Waiting so far (queued) or in total until the first start.
  o["wait_s"] = std::max(0.0, start.value_or(j.end_time.value_or(now())) - j.submit_time);
  if (j.state == JobState::Queued || j.state == JobState::Recovering || j.state == JobState::Estimating) {
    auto w = waiting_.find(j.id);
    o["waiting_reason"] = w != waiting_.end() ? json(w->second) : json("not yet considered by the scheduler");
  } else {
    o["waiting_reason"] = nullptr;
  }
  return o;
}

HttpResponse Daemon::web_overview(const Peer& peer) {
  const bool details = web_shows_details(peer);
  json o;
  o["time"] = now();
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  o["host"] = host;
  o["visibility"] = details ? "all" : "anonymous";
  json gpus = json::array();
  for (const GpuSlot& s : monitor_.slots()) {
    json jobs = json::array();
    for (const auto& [aid, l] : live_)
      if (std::find(l.attempt.slots.begin(), l.attempt.slots.end(), s.slot) != l.attempt.slots.end())
        jobs.push_back(l.attempt.job_id);
    gpus.push_back({{"slot", s.slot}, {"uuid", s.uuid}, {"name", s.name}, {"total_mib", s.total_mib},
                    {"used_mib", s.used_mib}, {"reserved_mib", ledger_.reserved_on(s.slot)},
                    {"smact", opt(s.last_smact)}, {"smocc", opt(s.last_smocc)}, {"gpu_util", opt(s.gpu_util)},
                    {"power_w", opt(s.power_w)}, {"healthy", s.healthy}, {"drained", drained_.count(s.uuid) > 0},
                    {"jobs", jobs}});
  }
  o["gpus"] = gpus;
  json jobs = json::array();
  for (const JobRow& j : store_.jobs(std::nullopt, true)) jobs.push_back(web_job_summary(j, details));
  for (const JobRow& j : store_.recently_finished(50)) jobs.push_back(web_job_summary(j, details));
  o["jobs"] = jobs;
  const StoreTotals t = store_.totals();
  o["counts"] = t.jobs_by_state;
  json events = json::array();
  for (const EventRow& e : store_.recent_events(100))
    events.push_back({{"time", e.time}, {"job_id", e.job_id ? json(*e.job_id) : json(nullptr)}, {"kind", e.kind},
                      {"message", details || !e.job_id ? e.message : std::string("(details hidden)")}});
  o["events"] = events;
  return json_reply(200, o);
}

HttpResponse Daemon::web_gpu_samples(const HttpRequest& req) {
  double since = now() - kDefaultSamplesWindow;
  if (auto it = req.query.find("since"); it != req.query.end()) {
    try {
      std::size_t used = 0;
      since = std::stod(it->second, &used);
      if (used != it->second.size() || !std::isfinite(since)) throw std::invalid_argument("");
    } catch (const std::exception&) {
      return json_error(400, fmt::format("query 'since' must be a Unix time in seconds, not '{}'", one_line(it->second)));
    }
    // Bounded work per request (anyone may ask): never more than the dashboard's window.
    since = std::max(since, now() - kDefaultSamplesWindow);
  }
  std::map<int, json> per_slot;
  for (const GpuSlot& s : monitor_.slots())
    per_slot[s.slot] = {{"slot", s.slot}, {"t", json::array()}, {"used_mib", json::array()},
                        {"reserved_mib", json::array()}, {"smact", json::array()}, {"power_w", json::array()}};
  for (const GpuSampleRow& r : store_.samples_since(since)) {
    auto it = per_slot.find(r.slot);
    if (it == per_slot.end()) continue;
    json& g = it->second;
    g["t"].push_back(r.time);
    g["used_mib"].push_back(r.used_mib);
    g["reserved_mib"].push_back(opt(r.reserved_mib));
    g["smact"].push_back(opt(r.smact));
    g["power_w"].push_back(opt(r.power_w));
  }
  json gpus = json::array();
  for (auto& [slot, g] : per_slot) gpus.push_back(std::move(g));
  return json_reply(200, json{{"time", now()}, {"gpus", gpus}});
}

HttpResponse Daemon::web_job(const std::string& id_text, const Peer& peer) {
  JobId id = 0;
  auto [ptr, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
  if (id_text.empty() || ec != std::errc() || ptr != id_text.data() + id_text.size() || id == 0)
    return json_error(400, fmt::format("'{}' is not a job id", id_text));
  if (!web_shows_details(peer))
    return json_error(403, "job details are shown only to their owner: the web listener cannot tell who you are (use "
                           "`colo show` on the machine, or an admin sets [web] public_job_details = true)");
  auto j = store_.job(id);
  if (!j) return json_error(404, fmt::format("no job {}", id));
  json job = web_job_summary(*j, true);
  job["need_explanation"] = j->need_explanation;
  json attempts = json::array();
  for (const AttemptRow& a : store_.attempts_of(id))
    attempts.push_back({{"n", a.n}, {"slots", a.slots}, {"start_time", opt(a.start_time)}, {"end_time", opt(a.end_time)},
                        {"outcome", a.outcome}, {"peak_mib", opt(a.peak_mib)}, {"reserve_mib", a.reserve_mib},
                        {"evidence", a.evidence}});
  job["attempts"] = attempts;
  json t = json::array(), mib = json::array();
  for (const auto& [time, m] : store_.job_samples(id)) {
    t.push_back(time);
    mib.push_back(m);
  }
  json events = json::array();
  for (const EventRow& e : store_.events_of(id))
    events.push_back({{"time", e.time}, {"job_id", id}, {"kind", e.kind}, {"message", e.message}});
  return json_reply(200, json{{"job", job}, {"memory", {{"t", t}, {"mib", mib}}}, {"events", events}});
}

}  // namespace colo::daemon
