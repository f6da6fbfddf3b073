// colo show ID: one job in full — state, placement, every attempt, events.
#include <ctime>
#include <iostream>

#include <fmt/format.h>

#include "core/one_line.h"
#include "cli/command_registry.h"
#include "core/parse_number.h"
#include "daemon/client/api_client.h"
#include "daemon/client/job_request.h"

namespace {

using nlohmann::json;

std::string when(const json& t) {
  if (t.is_null()) return "-";
  const std::time_t s = static_cast<std::time_t>(t.get<double>());
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", std::localtime(&s));
  return buf;
}

std::string opt(const json& v) { return v.is_null() ? "-" : v.dump(); }

colo::cli::RegisterCommand reg_show([](CLI::App& app) {
  auto id = std::make_shared<std::string>();  // parsed below: "-1" is no id
  auto as_json = std::make_shared<bool>(false);
  CLI::App* c = app.add_subcommand("show", "show one job: state, GPUs, attempts, events");
  c->add_option("id", *id, "job id")->required();
  c->add_flag("--json", *as_json, "print JSON");
  c->callback([id, as_json] {
    const colo::daemon::ApiClient client(colo::cli::globals().socket);
    const json j = client.call("GET", fmt::format("/v1/jobs/{}", colo::parse_integer(*id, "job id", 1, INT64_MAX)));
    if (*as_json) {
      std::cout << j.dump(2) << "\n";
      return;
    }
    std::string cmd;
    for (const json& a : j.at("argv")) cmd += (cmd.empty() ? "" : " ") + colo::one_line(a.get<std::string>());
    std::cout << fmt::format("job {}  {}  ({}, uid {})\n", j.at("id").get<std::uint64_t>(), colo::one_line(j.at("name").get<std::string>()),
                             colo::one_line(j.at("user").get<std::string>()), j.at("uid").get<std::int64_t>());
    std::cout << fmt::format("  state      {}{}\n", colo::one_line(j.at("state").get<std::string>()),
                             colo::one_line(j.at("reason").get<std::string>()).empty() ? "" : "  — " + colo::one_line(j.at("reason").get<std::string>()));
    if (j.contains("waiting_reason") && j.at("waiting_reason").is_string())
      std::cout << fmt::format("  waiting    {}\n", colo::one_line(j.at("waiting_reason").get<std::string>()));
    std::cout << fmt::format("  command    {}\n  workdir    {}\n", cmd, colo::one_line(j.at("workdir").get<std::string>()));
    std::string need = j.at("need_mib").is_null()
                           ? std::string("unknown")
                           : colo::daemon::format_mib(j.at("need_mib").get<colo::MiB>()) + " [" +
                                 colo::one_line(j.at("need_source").get<std::string>()) + "]";
    std::cout << fmt::format("  need       {} per GPU × {} GPU(s){}\n", need, j.at("gpus_requested").get<int>(),
                             colo::one_line(j.at("need_explanation").get<std::string>()).empty() ? "" : "  (" + colo::one_line(j.at("need_explanation").get<std::string>()) + ")");
    if (j.contains("smact") && j.at("smact").is_number())
      std::cout << fmt::format("  SMACT      {:.2f} solo [{}]\n", j.at("smact").get<double>(),
                               colo::one_line(j.value("smact_source", std::string())));
    if (j.value("checkpoint", false)) std::cout << "  slots      checkpoints on request (time slots apply)\n";
    if (j.contains("probe") && j.at("probe").is_object()) {
      const json& p = j.at("probe");
      const json& rq = p.at("request");
      const std::string what = rq.contains("script")
                                   ? "script " + colo::one_line(rq.value("script", std::string("?"))) +
                                         (rq.contains("torchrun") && rq.at("torchrun").is_number_integer()
                                              ? fmt::format(" (rank 0 of torchrun's {})", rq.at("torchrun").get<std::int64_t>())
                                              : std::string())
                                   : fmt::format("{} batch {} {}", colo::one_line(rq.value("model", std::string("?"))),
                                                 rq.value("batch", std::int64_t{0}), colo::one_line(rq.value("optimizer", std::string("?"))));
      std::cout << fmt::format("  probe      {} [{}]: {}{}{}\n", what,
                               colo::one_line(p.at("estimator").get<std::string>()), colo::one_line(p.at("status").get<std::string>()),
                               p.at("seconds").is_null() ? "" : fmt::format(" in {:.1f} s", p.at("seconds").get<double>()),
                               // a success's explanation is the need's, printed above
                               p.at("status") == "done" || colo::one_line(p.at("detail").get<std::string>()).empty()
                                   ? ""
                                   : "  (" + colo::one_line(p.at("detail").get<std::string>()) + ")");
    }
    std::string g;
    for (const json& x : j.at("gpus")) g += fmt::format("{}{} ({})", g.empty() ? "" : ", ", x.at("index").get<int>(), colo::one_line(x.at("uuid").get<std::string>()));
    std::cout << fmt::format("  gpus       {}\n  submitted  {}\n  ended      {}\n  exit code  {}\n", g.empty() ? "-" : g,
                             when(j.at("submit_time")), when(j.at("end_time")), opt(j.at("exit_code")));
    if (j.contains("files_removed") && j.at("files_removed").is_string())  // the paths would name files that are gone
      std::cout << fmt::format("  logs       none: {}\n", colo::one_line(j.at("files_removed").get<std::string>()));
    else
      std::cout << fmt::format("  logs       {}\n             {}\n", colo::one_line(j.at("stdout").get<std::string>()), colo::one_line(j.at("stderr").get<std::string>()));
    for (const json& a : j.at("attempts"))
      std::cout << fmt::format("  attempt {}  {:<9} {:<11} gpus {} reserve {}{} peak {} exit {}{}\n", a.at("n").get<int>(),
                               colo::one_line(a.at("state").get<std::string>()), colo::one_line(a.at("outcome").get<std::string>()), a.at("gpus").dump(),
                               colo::daemon::format_mib(a.at("reserve_mib").get<colo::MiB>()),
                               a.at("exclusive").get<bool>() ? " alone" : "",
                               a.at("peak_mib").is_null() ? "-" : colo::daemon::format_mib(a.at("peak_mib").get<colo::MiB>()),
                               opt(a.at("exit_code")),
                               colo::one_line(a.at("evidence").get<std::string>()).empty() ? "" : "  " + colo::one_line(a.at("evidence").get<std::string>()));
    for (const json& e : j.at("events"))
      std::cout << fmt::format("  {}  {:<9} {}\n", when(e.at("time")), colo::one_line(e.at("kind").get<std::string>()), colo::one_line(e.at("message").get<std::string>()));
  });
});

}  // namespace
