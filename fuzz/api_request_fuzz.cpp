// The API request path: raw bytes from the Unix socket → RequestParser (HTTP head + body,
// src/daemon/client/http_message.cpp) → Daemon::handle (routing, JSON bodies, job submission,
// src/daemon/api_routes.cpp, job_request.cpp).
//
// One Daemon is built lazily and reused (a temporary state directory on tmpfs, two in-memory fake
// GPUs, /bin/false as the shim). handle() never launches anything — only the daemon's run() loop
// schedules — so a submitted job just stays queued. The daemon is rebuilt on a fresh state
// directory every kRecycle inputs so the job table stays small and every input stays fast.
//
// Contract checked: handle() returns (no exception escapes), never a 5xx, and the body is JSON.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "daemon/client/http_message.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "fuzz_common.h"
#include "gpu/backend.h"

namespace {

class FuzzBackend : public colo::gpu::GpuBackend {
 public:
  std::string describe() const override { return "fuzz (2 in-memory GPUs)"; }
  std::vector<colo::gpu::DeviceInfo> discover() override {
    std::vector<colo::gpu::DeviceInfo> out;
    for (int i = 0; i < 2; ++i) {
      colo::gpu::DeviceInfo d;
      d.index = i;
      d.uuid = "GPU-fuzz-" + std::to_string(i);
      d.name = "Fuzz GPU 40GB";
      d.total_mib = 40960;
      out.push_back(d);
    }
    return out;
  }
  colo::gpu::DeviceSample sample(int index) override {
    colo::gpu::DeviceSample s;
    s.index = index;
    s.uuid = "GPU-fuzz-" + std::to_string(index);
    s.memory.total_mib = 40960;
    return s;
  }
  colo::gpu::Capabilities capabilities(int) override { return {}; }
};

constexpr int kRecycle = 2000;

struct Harness {
  std::string dir;
  std::unique_ptr<colo::daemon::Daemon> daemon;
  int uses = 0;

  void start() {
    const std::string base = colo::fuzz::scratch_dir();
    static int generation = 0;
    dir = base + "/colod-" + std::to_string(generation++);
    std::filesystem::remove_all(dir);
    colo::daemon::DaemonConfig cfg;
    cfg.state_dir = dir;
    daemon = std::make_unique<colo::daemon::Daemon>(cfg, std::make_unique<FuzzBackend>(),
                                                    std::vector<std::pair<std::string, std::string>>{}, "/bin/false");
    uses = 0;
  }
  void stop() {
    daemon.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  ~Harness() { stop(); }
};

Harness& harness() {
  static Harness h;
  if (!h.daemon || ++h.uses > kRecycle) {
    // The daemon logs every start to stderr; keep the fuzzer's output readable.
    std::cerr.setstate(std::ios::badbit);
    h.stop();
    h.start();
    std::cerr.clear();
  }
  return h;
}

}  // namespace

COLO_FUZZ_TARGET(api_request) {
  Harness& h = harness();
  colo::daemon::RequestParser parser;
  const std::string_view bytes = colo::fuzz::as_text(data, size);
  // Arrives in two reads, as over a socket: the split point must not matter.
  const std::size_t cut = size > 0 ? data[0] % (size + 1) : 0;
  parser.feed(bytes.substr(0, cut));
  parser.feed(bytes.substr(cut));
  if (parser.failed()) {
    colo::fuzz::check_message(parser.error().c_str(), "api_request");
    if (parser.error_status() < 400 || parser.error_status() > 599) std::abort();
    return 0;
  }
  if (!parser.done()) return 0;  // incomplete request: the server would wait for more bytes
  const colo::daemon::Peer peer{::geteuid(), ::getegid(), ::getpid()};
  const colo::daemon::HttpResponse r = h.daemon->handle(parser.request(), peer);
  if (r.status >= 500) {
    std::fprintf(stderr, "colo fuzz [api_request]: status %d: %s\n", r.status, r.body.c_str());
    std::abort();
  }
  if (!nlohmann::json::accept(r.body)) {
    std::fprintf(stderr, "colo fuzz [api_request]: response body is not JSON: %s\n", r.body.c_str());
    std::abort();
  }
  return 0;
}
