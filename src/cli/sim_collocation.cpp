#include "cli/sim_collocation.h"

#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/number_option.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/one_line.h"
#include "core/parse_number.h"
#include "sim/collocation_replay.h"
#include "sim/models/mps_model.h"
#include "sim/models/sim_model.h"
#include "sim/models/streams_model.h"

namespace colo::cli {

namespace {

struct ColocArgs {
  std::vector<std::string> jobs;
  std::string sharing, mig, model;
  long long gpu_memory_mib = 40960;  // streams/MPS: the jobs' memory together must fit
  bool gpu_memory_given = false;     // --gpu-memory-mib means nothing to MIG (instances have their own)
  bool json = false;
};

// NAME:SMACT:SOLO[:BUSY[:MEM]], e.g. "resnet152:0.82:1.05h" or "recommender:0.05:5.36h:0.05:29GiB".
sim::CollocatedJob parse_job(const std::string& text) {
  std::vector<std::string> f;
  std::size_t start = 0;
  while (true) {
    const std::size_t colon = text.find(':', start);
    f.push_back(text.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  const std::string where = fmt::format("--job '{}'", one_line(text));
  if (f.size() < 3 || f.size() > 5 || f[0].empty())
    throw UserError(fmt::format("{}: expected NAME:SMACT:SOLO[:BUSY[:MEM]], e.g. resnet152:0.82:1.05h", where));
  if (const std::string c = control_char_in(f[0]); !c.empty())
    throw UserError(fmt::format("{}: the name holds a control character ({}); it is a row of the output table", where, c));
  sim::CollocatedJob j;
  j.name = f[0];
  j.smact = parse_real(f[1], where + " SMACT", 0, 1);
  j.solo_s = parse_seconds(f[2], where + " SOLO", 1, limits::kMaxSeconds);  // at least a second of work
  if (f.size() > 3 && !f[3].empty()) {
    j.busy = parse_real(f[3], where + " BUSY", 0, 1);
    // As the workload catalog: a kernel runs whenever SMs are active, so busy ≥ SMACT (a smaller
    // busy share would let two jobs do more SM work than one GPU has).
    if (j.busy < j.smact)
      throw UserError(fmt::format("{}: BUSY must be in [SMACT, 1] = [{:g}, 1] (a kernel runs whenever SMs are active), got {:g}",
                                  where, j.smact, j.busy));
  }
  if (f.size() > 4) j.mem_mib = parse_mib(f[4], where + " MEM", 1, limits::kMaxGpuMiB);
  return j;
}

void run(const ColocArgs& a) {
  if (a.jobs.empty()) throw UserError("sim collocation: give the jobs with --job NAME:SMACT:SOLO (one per job)");
  std::vector<sim::CollocatedJob> jobs;
  for (const std::string& t : a.jobs) {
    jobs.push_back(parse_job(t));
    for (std::size_t k = 0; k + 1 < jobs.size(); ++k)
      if (jobs[k].name == jobs.back().name)
        throw UserError(fmt::format("--job '{}': the name '{}' is given twice (names tell the jobs apart in the output)", t,
                                    jobs.back().name));
  }
  sim::SimModel model;
  if (!a.model.empty()) model = sim::load_sim_model(a.model);
  sim::CollocationResult r;
  if (a.sharing == "mig") {
    if (a.mig.empty()) throw UserError("sim collocation --sharing mig needs --mig LAYOUT (e.g. 3g.20gb,3g.20gb)");
    if (a.gpu_memory_given)
      throw UserError("--gpu-memory-mib is for --sharing streams or mps (MIG instances have their own memory, from --mig)");
    r = sim::replay_mig(jobs, sim::parse_mig_layout(a.mig, model.mig));
  } else if (a.sharing == "mps" || a.sharing == "streams") {
    if (!a.mig.empty()) throw UserError("--mig is for --sharing mig");
    // Streams and MPS share the GPU's memory: jobs that do not fit together cannot start together.
    MiB together = 0;
    for (const auto& j : jobs) together += j.mem_mib;
    if (together > a.gpu_memory_mib)
      throw UserError(fmt::format("the jobs need {} MiB together, more than the GPU's {} MiB (--gpu-memory-mib): they "
                                  "cannot run side by side under {}",
                                  together, a.gpu_memory_mib, a.sharing));
    const auto m = a.sharing == "mps" ? sim::make_mps_model(model.mps) : sim::make_streams_model(model.streams);
    r = sim::replay_shared(jobs, *m);
  } else {
    throw UserError(fmt::format("--sharing must be streams, mps or mig, got '{}'", a.sharing));
  }
  if (a.json) {
    nlohmann::json j;
    j["sharing"] = a.sharing;
    j["makespan_s"] = r.makespan_s;
    j["serial_s"] = r.serial_s;
    j["vs_serial"] = r.serial_s > 0 ? r.makespan_s / r.serial_s - 1 : 0;
    j["jobs"] = nlohmann::json::array();
    for (const auto& o : r.jobs)
      j["jobs"].push_back({{"name", o.name}, {"finish_s", o.finish_s}, {"slowdown", o.slowdown}, {"instance", o.instance}});
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  std::cout << fmt::format("{:<20} {:>10} {:>10} {:>9} {}\n", "job", "alone", "together", "slower", a.sharing == "mig" ? "instance" : "");
  for (std::size_t i = 0; i < jobs.size(); ++i)
    std::cout << fmt::format("{:<20} {:>9.0f}s {:>9.0f}s {:>+8.1f}% {}\n", r.jobs[i].name, jobs[i].solo_s,
                             r.jobs[i].finish_s, 100 * (r.jobs[i].slowdown - 1), r.jobs[i].instance);
  std::cout << fmt::format("all done after {:.0f} s; one after another {:.0f} s ({:+.1f} %)\n", r.makespan_s, r.serial_s,
                           r.serial_s > 0 ? 100 * (r.makespan_s / r.serial_s - 1) : 0.0);
}

}  // namespace

CLI::App* add_sim_collocation(CLI::App* sim) {
  auto a = std::make_shared<ColocArgs>();
  CLI::App* c = sim->add_subcommand(
      "collocation", "jobs started together on one GPU under streams, MPS or MIG, on the model (thesis ch. 4)");
  c->add_option("--job", a->jobs, "NAME:SMACT:SOLO[:BUSY[:MEM]] (SOLO e.g. 1.05h; repeat per job)")
      ->allow_extra_args(false);
  c->add_option("--sharing", a->sharing, "streams | mps | mig")->required();
  c->add_option("--mig", a->mig, "the GPU's MIG instances, e.g. 3g.20gb,3g.20gb (with --sharing mig)")->check(non_empty());
  c->add_option("--model", a->model, "simulator model file (default: built in)")->check(non_empty());
  CLI::Option* mem = add_mib_flag(c, "--gpu-memory-mib", a->gpu_memory_mib, 1, limits::kMaxGpuMiB,
                                  "streams/MPS: the GPU's memory, which the jobs' MEM must fit together (default 40960)");
  c->add_flag("--json", a->json, "print one JSON object");
  c->callback([a, mem] {
    a->gpu_memory_given = mem->count() > 0;
    run(*a);
  });
  return c;
}

}  // namespace colo::cli
