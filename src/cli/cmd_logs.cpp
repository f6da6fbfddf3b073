// colo logs ID [-f]: a job's stdout (or --stderr), every attempt appended; -f follows it
// until the job ends, across colod restarts.
#include <chrono>
#include <iostream>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "cli/command_registry.h"
#include "common/base64.h"
#include "core/error.h"
#include "core/one_line.h"
#include "core/parse_number.h"
#include "daemon/client/api_client.h"

namespace {

struct LogsOptions {
  std::string id;  // parsed in the callback: "-1" is no id
  bool follow = false, stderr_stream = false, json = false;
};

colo::cli::RegisterCommand reg_logs([](CLI::App& app) {
  auto o = std::make_shared<LogsOptions>();
  CLI::App* c = app.add_subcommand("logs", "print a job's output");
  c->add_option("id", o->id, "job id")->required();
  c->add_flag("-f,--follow", o->follow, "keep printing until the job ends (waiting through a colod restart)");
  c->add_flag("--stderr", o->stderr_stream, "the job's stderr instead of stdout");
  c->add_flag("--json", o->json, "print JSON objects {data, encoding, offset, size, state, finished} (one per chunk; data is text)");
  c->callback([o] {
    const colo::daemon::ApiClient client(colo::cli::globals().socket);
    const std::int64_t id = colo::parse_integer(o->id, "job id", 1, INT64_MAX);
    std::int64_t offset = 0;
    const char* stream = o->stderr_stream ? "stderr" : "stdout";
    // -f outlives a colod restart: once colod has answered, it waits for it to answer again
    // (saying so on stderr) and goes on from the same offset; it gives up after kGiveUp of
    // silence. A colod that never answered (a wrong --socket) is an error at once.
    constexpr auto kGiveUp = std::chrono::minutes(10);
    std::optional<std::chrono::steady_clock::time_point> unreachable_since;
    bool answered = false;
    for (;;) {
      // The bytes exactly (base64) for the terminal; JSON lines carry text.
      const std::string target = fmt::format("/v1/jobs/{}/logs?stream={}&offset={}&encoding={}", id, stream, offset,
                                             o->json ? "text" : "base64");
      nlohmann::json r;
      try {
        r = client.call("GET", target);
      } catch (const colo::daemon::ColodUnreachable& e) {
        const auto now = std::chrono::steady_clock::now();
        if (!o->follow || !answered || (unreachable_since && now - *unreachable_since >= kGiveUp)) throw;
        if (!unreachable_since) {
          unreachable_since = now;
          std::cerr << fmt::format("colo: {}; waiting for colod to answer again (at most 10 minutes; Ctrl-C stops)\n",
                                   colo::one_line(e.what()))
                    << std::flush;
        }
        std::this_thread::sleep_for(std::chrono::seconds(1));
        continue;
      }
      answered = true;
      if (unreachable_since) {
        unreachable_since.reset();
        std::cerr << "colo: colod answers again; following on\n" << std::flush;
      }
      offset = r.at("offset").get<std::int64_t>();
      if (o->json) {
        std::cout << r.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      } else {
        const auto bytes = colo::base64_decode(r.at("data").get<std::string>());
        if (!bytes) throw colo::UserError("colod sent a log chunk that is not base64");
        std::cout << *bytes << std::flush;
      }
      const bool more = offset < r.at("size").get<std::int64_t>();
      if (more) continue;
      if (!o->follow || r.at("finished").get<bool>()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
});

}  // namespace
