// colo sim: replay a submission trace on a simulated server, driving the real scheduler core.
//   colo sim [--workloads F] [--trace F] [--gpus N] [--gpu-memory-mib M] [--policy P]
//            [--estimator E] [--sharing streams|mps] [--no-conditions] [--smact-cap PCT]
//            [--margin-mib M] [--recovery strict|loose|none] [--nodes N] [--seed S] [--json] [--compare]
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/command_registry.h"
#include "cli/number_option.h"
#include "cli/progress.h"
#include "cli/sim_collocation.h"
#include "cli/sim_report.h"
#include "common/resource_path.h"
#include "core/error.h"
#include "core/one_line.h"
#include "core/policy/policy_definition.h"
#include "core/limits.h"
#include "core/time_slots.h"
#include "daemon/client/policy_file.h"
#include "sim/scenario.h"
#include "sim/models/sim_model.h"
#include "sim/workloads/trace.h"
#include "sim/workloads/workload_catalog.h"

namespace colo::cli {

namespace {

struct SimArgs {
  // The repository's data/ (or $COLO_DATA, or the installed share dir): runs from a clone alone.
  std::string workloads = data_path("carma/workloads.csv");
  std::string trace = data_path("carma/traces/philly_mix_90_tasks.csv");
  int gpus = 4;
  int nodes = 1;
  long long gpu_memory_mib = 40960;
  std::string policy = "magm";
  std::string policy_file;  // --policy-file: [policies.NAME] definitions
  std::string model;        // --model: the simulator's parameters (sim/models/sim_model.h); "" = built-in
  std::string estimator = "oracle";
  std::string sharing = "mps";
  std::string mig;  // --mig LAYOUT with --sharing mig
  bool no_conditions = false;
  double smact_cap_pct = 80;
  long long margin_mib = 2 * kGiB;
  long long min_free_mib = 5 * kGiB;
  std::string floor = "unknown";  // when --min-free-mib applies: unknown needs only, or always
  int backfill = 0;               // overtakes allowed per waiting head (0 = strict FIFO)
  int backfill_depth = 200;
  std::string recovery = "strict";
  long long recovery_step_mib = 5 * kGiB;
  bool recovery_share = false;  // --recovery-share: others may join a recovered job once its peak is seen
  bool adds_progress = false;   // --adds-progress: a co-runner must raise its GPU's predicted progress
  std::uint64_t seed = 0;
  double duration_jitter = 0;
  double ramp_s = 30;
  double oom_detect_s = 10;
  double slots_s = 0;                    // --slots: time slot length (0 = off)
  std::optional<double> slot_notice_s;  // --slot-notice: default min(600 s, a tenth of the slot)
  bool json = false;
  bool compare = false;
  bool gpu_memory_mib_given = false;  // --gpu-memory-mib was on the command line
  bool report_given = false;          // --report was on the command line
  bool ramp_given = false, oom_detect_given = false;  // else a --model's values apply
  std::string report;  // --report FILE: a self-contained HTML page (cli/sim_report.h)
};

std::string report_title(const SimArgs& a) {
  const std::string trace = std::filesystem::path(a.trace).stem().string();
  if (!a.mig.empty()) return fmt::format("colo sim — {}, {} GPUs as MIG {}", trace, a.gpus, a.mig);
  return fmt::format("colo sim — {}, {} × {} MiB", trace, a.gpus, a.gpu_memory_mib);
}

// The command that reproduces the run: every setting that shapes it (a report without one of
// them could not be re-run to the same page).
std::string report_command(const SimArgs& a) {
  std::string c = fmt::format("colo sim --workloads {} --trace {} --gpus {}", a.workloads, a.trace, a.gpus);
  if (a.nodes > 1) c += fmt::format(" --nodes {}", a.nodes);
  if (a.mig.empty()) c += fmt::format(" --gpu-memory-mib {}", a.gpu_memory_mib);
  if (a.compare) {
    c += " --compare";
  } else {
    c += fmt::format(" --policy {} --estimator {} --sharing {}", a.policy, a.estimator, a.sharing);
    if (!a.mig.empty()) c += " --mig " + a.mig;
    if (a.no_conditions) c += " --no-conditions";
  }
  if (!a.model.empty()) c += " --model " + a.model;
  if (!a.policy_file.empty()) c += " --policy-file " + a.policy_file;
  c += fmt::format(" --smact-cap {:g} --margin-mib {} --min-free-mib {} --floor {} --recovery {}", a.smact_cap_pct,
                   a.margin_mib, a.min_free_mib, a.floor, a.recovery);
  if (a.recovery == "loose") c += fmt::format(" --recovery-step-mib {}", a.recovery_step_mib);
  if (a.recovery_share) c += " --recovery-share";
  if (a.adds_progress) c += " --adds-progress";
  if (a.backfill > 0) c += fmt::format(" --backfill {} --backfill-depth {}", a.backfill, a.backfill_depth);
  if (a.ramp_given) c += fmt::format(" --ramp-s {:g}", a.ramp_s);
  if (a.oom_detect_given) c += fmt::format(" --oom-detect-s {:g}", a.oom_detect_s);
  if (a.slots_s > 0) c += fmt::format(" --slots {:g}", a.slots_s);
  if (a.slot_notice_s) c += fmt::format(" --slot-notice {:g}", *a.slot_notice_s);
  if (a.duration_jitter > 0) c += fmt::format(" --duration-jitter {:g} --seed {}", a.duration_jitter, a.seed);
  return one_line(c);
}

// "+12.3%", or "n/a" where the comparison has no value (nothing completed, a zero baseline).
std::string signed_pct(double ratio) {
  return std::isfinite(ratio) ? fmt::format("{:+.1f}%", 100 * ratio) : std::string("n/a");
}
std::string fixed3(double x) { return std::isfinite(x) ? fmt::format("{:.3f}", x) : std::string("n/a"); }

// The jobs that failed and why (a job no GPU set can hold, an OOM crash without recovery).
nlohmann::json failures_of(const sim::SimResult& r) {
  nlohmann::json f = nlohmann::json::array();
  for (std::size_t i = 0; i < r.outcomes.size(); ++i)
    if (r.outcomes[i].failed) f.push_back({{"job", i}, {"name", r.outcomes[i].name}, {"reason", r.outcomes[i].fail_reason}});
  return f;
}

nlohmann::json to_json(const sim::SimResult& r) {
  return {{"jobs", r.jobs},
          {"failures", failures_of(r)},
          {"completed", r.completed},
          {"failed", r.failed},
          {"makespan_s", r.makespan_s},
          {"avg_wait_s", r.avg_wait_s},
          {"avg_exec_s", r.avg_exec_s},
          {"avg_jct_s", r.avg_jct_s},
          {"energy_mj", r.energy_mj},
          {"oom_crashes", r.oom_crashes},
          {"smact_avg", r.smact_avg},
          {"mem_util_avg", r.mem_util_avg},
          {"lower_bound_s", r.lower_bound_s},
          {"energy_lower_bound_mj", r.energy_lower_bound_mj ? nlohmann::json(*r.energy_lower_bound_mj) : nlohmann::json()},
          {"max_jobs_per_gpu", r.max_jobs_per_gpu},
          {"max_wait_s", r.max_wait_s},
          {"max_queued_s", r.max_queued_s},
          {"jain_index", r.jain_index},
          {"checkpoints", r.checkpoints},
          {"decisions", r.decisions},
          {"policy", r.policy}};
}

sim::ScenarioBase make_base(const SimArgs& a) {
  if (a.gpus < 1 || a.gpus > 100000) throw UserError(fmt::format("--gpus must be 1..100000, got {}", a.gpus));
  if (a.gpu_memory_mib < 1) throw UserError(fmt::format("--gpu-memory-mib must be positive, got {}", a.gpu_memory_mib));
  if (!(a.smact_cap_pct >= 1 && a.smact_cap_pct <= 100))
    throw UserError(fmt::format("--smact-cap is a percentage in [1, 100] (e.g. 80), got {}", a.smact_cap_pct));
  // Ranges are checked as the flags are read (cli/number_option.h); these depend on two flags.
  if (a.margin_mib > a.gpu_memory_mib)
    throw UserError(fmt::format("--margin-mib {} is larger than a GPU (--gpu-memory-mib {})", a.margin_mib, a.gpu_memory_mib));
  if (a.min_free_mib > a.gpu_memory_mib)
    throw UserError(
        fmt::format("--min-free-mib {} is larger than a GPU (--gpu-memory-mib {})", a.min_free_mib, a.gpu_memory_mib));
  if (a.recovery_step_mib < 1)
    throw UserError(fmt::format("--recovery-step-mib must be positive, got {}", a.recovery_step_mib));
  if (!(a.duration_jitter >= 0 && a.duration_jitter < 1))
    throw UserError(fmt::format("--duration-jitter must be in [0, 1), got {}", a.duration_jitter));
  if (!(a.ramp_s >= 0 && std::isfinite(a.ramp_s))) throw UserError(fmt::format("--ramp-s must be ≥ 0, got {}", a.ramp_s));
  if (!(a.oom_detect_s >= 0 && std::isfinite(a.oom_detect_s)))
    throw UserError(fmt::format("--oom-detect-s must be ≥ 0, got {}", a.oom_detect_s));
  const auto rec = a.recovery == "none" ? std::optional<RecoveryMode>(RecoveryMode::Strict)
                                        : recovery_mode_from_string(a.recovery);
  if (!rec) throw UserError(fmt::format("--recovery must be strict, loose or none, got '{}'", a.recovery));
  if (a.nodes < 1 || a.nodes > a.gpus || a.gpus % a.nodes != 0)
    throw UserError(fmt::format("--nodes {} must divide --gpus {} (every server has as many GPUs)", a.nodes, a.gpus));

  sim::ScenarioBase b;
  b.config.gpus = a.gpus;
  b.config.nodes = a.nodes;
  b.config.recover_ooms = a.recovery != "none";
  b.config.gpu_memory_mib = a.gpu_memory_mib;
  b.config.packing_bound = true;  // the lower bound beside every makespan
  b.config.scheduler.recovery = {*rec, a.recovery_step_mib, a.recovery_share};
  b.config.scheduler.backfill = {a.backfill, a.backfill_depth};
  b.config.ramp_s = a.ramp_s;
  b.config.oom_detect_s = a.oom_detect_s;
  b.config.slots.slot_s = a.slots_s;
  b.config.slots.notice_s = a.slot_notice_s.value_or(std::min(600.0, a.slots_s / 10));
  if (a.slot_notice_s && a.slots_s == 0) throw UserError("--slot-notice needs --slots");
  if (const std::string why = time_slots_problem(b.config.slots); !why.empty())
    throw UserError(a.slot_notice_s
                        ? fmt::format("--slots {:g} --slot-notice {:g}: {}", a.slots_s, b.config.slots.notice_s, why)
                        : fmt::format("--slots {:g} (its notice {:g} s by default): {}", a.slots_s, b.config.slots.notice_s, why));
  b.conditions.smact_cap = a.smact_cap_pct / 100.0;
  b.conditions.margin_mib = a.margin_mib;
  b.conditions.min_free_unknown_mib = a.min_free_mib;
  if (a.floor != "unknown" && a.floor != "always")
    throw UserError(fmt::format("--floor must be 'unknown' or 'always', got '{}'", a.floor));
  b.conditions.floor_always = a.floor == "always";
  b.conditions.adds_progress = a.adds_progress;
  b.estimators = sim::estimator_context_for(a.workloads);
  b.duration_jitter = a.duration_jitter;
  b.seed = a.seed;
  return b;
}

void print_one(const SimArgs& a, const sim::SimResult& r) {
  if (a.json) {
    std::cout << to_json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  std::cout << fmt::format("policy      {}\nestimator   {}\nsharing     {}{}\n", r.policy, a.estimator, a.sharing,
                           a.mig.empty() ? "" : " (" + a.mig + " per GPU)");
  std::cout << fmt::format("jobs        {} ({} completed, {} failed)\n", r.jobs, r.completed, r.failed);
  const nlohmann::json failures = failures_of(r);
  for (std::size_t i = 0; i < failures.size() && i < 5; ++i)
    std::cout << fmt::format("  failed    job {} ({}): {}\n", failures[i].at("job").get<std::size_t>(),
                             colo::one_line(failures[i].at("name").get<std::string>()),
                             failures[i].at("reason").get<std::string>());
  if (failures.size() > 5) std::cout << fmt::format("  failed    … and {} more (--json lists all)\n", failures.size() - 5);
  std::cout << fmt::format("makespan    {:.0f} s  ({:.2f} h; lower bound {:.0f} s)\n", r.makespan_s,
                           r.makespan_s / 3600, r.lower_bound_s);
  std::cout << fmt::format("avg wait    {:.0f} s\navg exec    {:.0f} s\navg JCT     {:.0f} s\n", r.avg_wait_s,
                           r.avg_exec_s, r.avg_jct_s);
  std::cout << fmt::format("energy      {:.2f} MJ{}\nOOM crashes {}\nSMACT avg   {:.1f} %\nmemory avg  {:.1f} %\n",
                           r.energy_mj,
                           r.energy_lower_bound_mj ? fmt::format("  (lower bound {:.2f} MJ)", *r.energy_lower_bound_mj) : "",
                           r.oom_crashes, 100 * r.smact_avg, 100 * r.mem_util_avg);
  std::cout << fmt::format("most jobs on one GPU {}\n", r.max_jobs_per_gpu);
  std::cout << fmt::format("max wait    {:.0f} s (first start; {:.0f} s queued in all)\n", r.max_wait_s, r.max_queued_s);
  std::cout << fmt::format("fairness    {} (Jain's index of solo time / JCT)\n", fixed3(r.jain_index));
  if (r.checkpoints > 0) std::cout << fmt::format("checkpoints {} (time slots)\n", r.checkpoints);
}

void run_compare(const SimArgs& a, const sim::ScenarioBase& base, const sim::Trace& trace) {
  const auto matrix = sim::thesis_matrix();
  struct Row {
    sim::Scenario sc;
    sim::SimResult r;
  };
  std::vector<Row> rows;
  std::vector<sim::SimTimeline> timelines(matrix.size());
  for (size_t i = 0; i < matrix.size(); ++i) {
    std::cerr << fmt::format("[{}/{}] {} ({})\n", i + 1, matrix.size(), matrix[i].label, to_string(matrix[i].sharing));
    sim::ScenarioBase b = base;
    if (!a.report.empty()) b.config.timeline = &timelines[i];
    rows.push_back({matrix[i], sim::run_scenario(matrix[i], b, trace)});
  }
  auto exclusive_of = [&](sim::SharingKind s) -> const sim::SimResult& {
    for (const Row& row : rows)
      if (row.sc.policy == PolicyKind::Exclusive && row.sc.sharing == s) return row.r;
    return rows.front().r;
  };
  if (!a.report.empty()) {
    // The page shows the timelines of exclusive (MPS) and of the best row (shortest makespan
    // among those without an OOM crash, else the shortest), and every row as bars.
    size_t best = 0, excl = 0;
    auto better = [&](size_t i, size_t j) {
      const bool ci = rows[i].r.oom_crashes == 0, cj = rows[j].r.oom_crashes == 0;
      return ci != cj ? ci : rows[i].r.makespan_s < rows[j].r.makespan_s;
    };
    for (size_t i = 0; i < rows.size(); ++i) {
      if (better(i, best)) best = i;
      if (rows[i].sc.policy == PolicyKind::Exclusive && rows[i].sc.sharing == sim::SharingKind::Mps) excl = i;
    }
    nlohmann::json compare = nlohmann::json::array();
    for (const Row& row : rows)
      compare.push_back({{"policy", row.sc.label}, {"estimator", row.sc.estimator},
                         {"sharing", std::string(to_string(row.sc.sharing))}, {"makespan_s", row.r.makespan_s},
                         {"energy_mj", row.r.energy_mj}, {"avg_wait_s", row.r.avg_wait_s},
                         {"avg_jct_s", row.r.avg_jct_s}, {"oom_crashes", row.r.oom_crashes},
                         {"max_wait_s", row.r.max_wait_s}, {"jain_index", row.r.jain_index}});
    auto label = [&](size_t i) {
      return fmt::format("{} ({})", rows[i].sc.label, to_string(rows[i].sc.sharing));
    };
    std::vector<ReportRun> runs{{label(best), &rows[best].r, &timelines[best]}};
    if (excl != best) runs.push_back({label(excl), &rows[excl].r, &timelines[excl]});
    const auto& ex = rows[excl].r;
    write_report(a.report, report_json(report_title(a), report_command(a), a.gpus, a.gpu_memory_mib, runs, compare,
                                       {{"makespan_s", ex.makespan_s}, {"energy_mj", ex.energy_mj},
                                        {"avg_wait_s", ex.avg_wait_s}, {"avg_jct_s", ex.avg_jct_s}}));
    std::cerr << fmt::format("colo sim: wrote {}\n", a.report);
  }
  if (a.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const Row& row : rows) {
      nlohmann::json j = to_json(row.r);
      j["scenario"] = row.sc.label;
      j["estimator"] = row.sc.estimator;
      j["sharing"] = std::string(to_string(row.sc.sharing));
      j["conditions"] = row.sc.conditions;
      const auto& ex = exclusive_of(row.sc.sharing);
      j["makespan_vs_exclusive"] = row.r.makespan_s / ex.makespan_s - 1;
      j["energy_vs_exclusive"] = row.r.energy_mj / ex.energy_mj - 1;
      arr.push_back(j);
    }
    std::cout << arr.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  // The header names every rule given on the command line: the conditions' own apply to the rows
  // with conditions, the queue's and the replay's to every row.
  std::vector<std::string> conditioned, everywhere;
  if (a.floor == "always") conditioned.emplace_back("floor always");
  if (a.adds_progress) conditioned.emplace_back("adds-progress");
  if (a.recovery_share) everywhere.emplace_back("recovery-share");
  if (a.backfill > 0) everywhere.push_back(fmt::format("backfill {} (depth {})", a.backfill, a.backfill_depth));
  if (a.slots_s > 0) everywhere.push_back(fmt::format("time slots of {:g} s", a.slots_s));
  if (a.duration_jitter > 0)
    everywhere.push_back(fmt::format("durations jittered ±{:g} (seed {})", a.duration_jitter, a.seed));
  std::cout << fmt::format("trace {} on {} GPU(s) × {} MiB{}, recovery {}, SMACT cap {}%, margin {} MiB{}{}\n",
                           one_line(trace.path), a.gpus, a.gpu_memory_mib,
                           a.nodes > 1 ? fmt::format(" in {} servers", a.nodes) : "", a.recovery, a.smact_cap_pct,
                           a.margin_mib,
                           conditioned.empty() ? "" : fmt::format("; rows with conditions: {}", fmt::join(conditioned, ", ")),
                           everywhere.empty() ? "" : fmt::format("; every row: {}", fmt::join(everywhere, ", ")));
  std::cout << fmt::format("{:<8} {:<22} {:>6} {:>9} {:>7} {:>8} {:>8} {:>8} {:>9} {:>7} {:>4} {:>6} {:>6} {:>4} {:>8} {:>5}\n",
                           "sharing", "scenario", "done", "makespan", "Δ", "JCT", "wait", "exec", "energyMJ", "Δ",
                           "OOM", "SMACT", "mem", "max", "maxwait", "Jain");
  for (const Row& row : rows) {
    const auto& r = row.r;
    const auto& ex = exclusive_of(row.sc.sharing);
    std::cout << fmt::format(
        "{:<8} {:<22} {:>6} {:>9.0f} {:>7} {:>8.0f} {:>8.0f} {:>8.0f} {:>9.2f} {:>7} {:>4} {:>5.1f}% {:>5.1f}% {:>4} {:>8.0f} {:>5}\n",
        to_string(row.sc.sharing), row.sc.label, fmt::format("{}/{}", r.completed, r.jobs), r.makespan_s,
        signed_pct(r.makespan_s / ex.makespan_s - 1), r.avg_jct_s, r.avg_wait_s, r.avg_exec_s, r.energy_mj,
        signed_pct(r.energy_mj / ex.energy_mj - 1), r.oom_crashes, 100 * r.smact_avg, 100 * r.mem_util_avg,
        r.max_jobs_per_gpu, r.max_wait_s, fixed3(r.jain_index));
  }
  // The bounds depend on the sharing model (its slowdown floor), not on the policy: the exclusive
  // row's, which completes every job that can complete.
  for (const sim::SharingKind k : {sim::SharingKind::Mps, sim::SharingKind::Streams}) {
    if (std::none_of(rows.begin(), rows.end(), [&](const Row& row) { return row.sc.sharing == k; })) continue;
    const auto& ex = exclusive_of(k);
    std::cout << fmt::format("lower bound {:<7} {:.0f} s ({} vs exclusive)", to_string(k), ex.lower_bound_s,
                             signed_pct(ex.lower_bound_s / ex.makespan_s - 1));
    if (ex.energy_lower_bound_mj)
      std::cout << fmt::format(", energy {:.2f} MJ ({})", *ex.energy_lower_bound_mj,
                               signed_pct(*ex.energy_lower_bound_mj / ex.energy_mj - 1));
    std::cout << "\n";
  }
}

void run(const SimArgs& a, const CLI::App& cmd) {
  sim::ScenarioBase base = make_base(a);
  // --model: the simulator's parameters from a model file (every value with its source);
  // --ramp-s / --oom-detect-s given on the command line still win.
  sim::SmActivityTable smact = sim::default_sm_activity_table();
  sim::MigParams mig_params;
  if (!a.model.empty()) {
    const sim::SimModel m = sim::load_sim_model(a.model);
    mig_params = m.mig;
    base.config.mps = m.mps;
    base.config.streams = m.streams;
    base.config.power = m.power;
    if (cmd.count("--ramp-s") == 0) base.config.ramp_s = m.ramp_s;
    if (cmd.count("--oom-detect-s") == 0) base.config.oom_detect_s = m.oom_detect_s;
    base.config.checkpoint = m.checkpoint;
    smact = m.smact;
  }
  if (a.compare)
    for (const char* flag : {"--policy", "--estimator", "--sharing", "--no-conditions", "--policy-file"})
      if (cmd.count(flag) > 0)
        throw UserError(fmt::format("--compare runs the whole thesis matrix; drop {}", flag));
  // Flags that only mean something beside another: given alone they would be silently ignored.
  if (cmd.count("--backfill-depth") > 0 && a.backfill == 0)
    throw UserError("--backfill-depth only matters with --backfill N (N > 0)");
  if (cmd.count("--recovery-step-mib") > 0 && a.recovery != "loose")
    throw UserError("--recovery-step-mib is loose recovery's step: give it with --recovery loose");
  if (a.adds_progress && (a.no_conditions || !a.mig.empty()))
    throw UserError(fmt::format("--adds-progress is a condition on co-runners; {} has none",
                                a.no_conditions ? "--no-conditions" : "--mig (one job per instance)"));
  if (cmd.count("--policy-file") > 0 && cmd.count("--policy") == 0)
    throw UserError(fmt::format("--policy-file defines policies for --policy NAME; without --policy the default ({}) "
                                "runs and the file is not used",
                                a.policy));
  if (a.recovery_share && a.recovery == "none")
    throw UserError("--recovery-share lets others join a recovered job; with --recovery none there is none");
  // --policy-file: the site's own [policies.NAME] definitions, usable by --policy NAME.
  std::optional<PolicyDefinition> custom;
  std::vector<PolicyDefinition> site;
  if (!a.policy_file.empty()) {
    site = daemon::load_policy_file(a.policy_file);
    for (const PolicyDefinition& d : site)
      if (d.name == a.policy) custom = d;
    // The file adds to the shipped policies (as in colod's config): --policy may name either.
    if (!custom && !policy_kind_from_string(a.policy))
      throw UserError(fmt::format("--policy '{}' is neither shipped nor defined in {}", one_line(a.policy), a.policy_file));
  }
  const auto policy = custom ? std::optional<PolicyKind>(PolicyKind::Custom) : policy_kind_from_string(a.policy);
  if (!policy)
    throw UserError(fmt::format("--policy must be exclusive, round-robin, first-fit, best-fit, magm, lug, node-weight "
                                "or one of --policy-file's, got '{}'",
                                a.policy));
  // colod's rule (daemon/config.cpp policy_problem) on the policy as colod would build it.
  if (a.adds_progress && !a.compare && daemon::resolve_policy(a.policy, site, base.conditions).whole_gpus)
    throw UserError(fmt::format("--adds-progress is a condition on co-runners; policy '{}' places whole GPUs",
                                one_line(a.policy)));
  // MIG: every GPU split into --mig's instances (one job each); the core places on instances.
  if ((a.sharing == "mig") != !a.mig.empty())
    throw UserError(a.mig.empty() ? "--sharing mig needs --mig LAYOUT (e.g. 3g.20gb,4g.20gb)"
                                  : "--mig LAYOUT goes with --sharing mig");
  if (a.compare && !a.mig.empty()) throw UserError("--compare runs streams and MPS; drop --mig");
  if (!a.mig.empty()) base.config.mig = sim::parse_mig_layout(a.mig, mig_params);
  if (!a.mig.empty() && a.gpu_memory_mib_given)
    throw UserError("--gpu-memory-mib does not go with --mig: the layout sets each instance's memory");
  if (!a.mig.empty()) {
    // A job gets one instance: a margin or floor given above the largest would admit nothing.
    MiB largest = 0;
    for (const sim::MigProfile& p : base.config.mig) largest = std::max(largest, p.memory_mib);
    for (const auto& [flag, v] : {std::pair{"--margin-mib", a.margin_mib}, std::pair{"--min-free-mib", a.min_free_mib}})
      if (cmd.count(flag) > 0 && v > largest)
        throw UserError(fmt::format("{} {} is larger than the largest MIG instance of --mig {} ({} MiB)", flag, v,
                                    one_line(a.mig), largest));
  }
  const auto sharing = a.sharing == "mig" ? std::optional<sim::SharingKind>(sim::SharingKind::Mps)
                                          : sim::sharing_kind_from_string(a.sharing);
  if (!sharing) throw UserError(fmt::format("--sharing must be streams, mps or mig, got '{}'", a.sharing));
  sim::make_estimator(a.estimator, base.estimators);  // validates the name before any file is read

  if (a.report_given) check_report_inputs(a.report);  // '' included: an error, not "no report"
  const sim::WorkloadCatalog catalog = sim::WorkloadCatalog::load(a.workloads, smact);
  const sim::Trace trace = sim::load_trace(a.trace, catalog);
  if (a.compare) {
    run_compare(a, base, trace);
    return;
  }
  sim::Scenario sc;
  sc.label = a.policy;
  sc.policy = *policy;
  sc.conditions = !a.no_conditions;
  sc.estimator = a.estimator;
  sc.sharing = *sharing;
  sim::ScenarioBase b = base;
  b.custom_policy = custom;
  Progress progress("colo sim", trace.entries.size(), a.json);
  if (progress.enabled()) {
    b.config.progress = [&](std::size_t done, std::size_t) { progress.update(done); };
    b.config.progress_every = 2000;
  }
  sim::SimTimeline timeline;
  if (!a.report.empty()) b.config.timeline = &timeline;
  const sim::SimResult r = sim::run_scenario(sc, b, trace);
  progress.finish();
  if (!a.report.empty()) {
    std::vector<MigSlot> slots;  // MIG: slot g × instances + i is GPU g's instance i (sim engine's order)
    for (int g = 0; !a.mig.empty() && g < a.gpus; ++g)
      for (const sim::MigProfile& p : base.config.mig) slots.push_back({fmt::format("GPU {} · {}", g, p.name), p.memory_mib});
    write_report(a.report, report_json(report_title(a), report_command(a), a.gpus, a.gpu_memory_mib,
                                       {{fmt::format("{} + {} + {}", a.policy, a.estimator, a.sharing), &r, &timeline}},
                                       nullptr, nullptr, slots));
    std::cerr << fmt::format("colo sim: wrote {}\n", a.report);
  }
  print_one(a, r);
}

RegisterCommand reg_sim([](CLI::App& app) {
  auto args = std::make_shared<SimArgs>();
  CLI::App* cmd = app.add_subcommand("sim", "Replay a submission trace on a simulated server (the real scheduler core)");
  cmd->add_option("--workloads", args->workloads, "workload catalog CSV")->capture_default_str();
  cmd->add_option("--trace", args->trace, "submission trace CSV (submit_offset_s, workload)")->capture_default_str();
  add_int_flag(cmd, "--gpus", args->gpus, 1, limits::kMaxServerGpus, "GPUs in the server (or the cluster, with --nodes)");
  add_int_flag(cmd, "--nodes", args->nodes, 1, limits::kMaxServerGpus,
               "servers the GPUs are split into, evenly (default 1); a job's GPUs come from one");
  add_mib_flag(cmd, "--gpu-memory-mib", args->gpu_memory_mib, 1, limits::kMaxGpuMiB, "memory per GPU (MiB)");
  cmd->add_option("--policy", args->policy, "exclusive|round-robin|first-fit|best-fit|magm|lug|node-weight (Slurm with colo slurm node-weight)")->capture_default_str();
  cmd->add_option("--estimator", args->estimator, "none|oracle|horus|faketensor|gpumemnet-csv (catalog columns), allocsim|gpumemnet (live, from the summaries), trace (live, the probe on each network)")
      ->capture_default_str();
  cmd->add_option("--sharing", args->sharing, "streams|mps|mig (mig: with --mig LAYOUT)")->capture_default_str();
  cmd->add_option("--mig", args->mig, "with --sharing mig: each GPU's MIG instances, e.g. 3g.20gb,4g.20gb (one job each)")
      ->check(non_empty());
  cmd->add_flag("--no-conditions", args->no_conditions, "no memory/SMACT conditions (thesis' \"no condition\" runs)");
  add_real_flag(cmd, "--smact-cap", args->smact_cap_pct, 1, 100, "SMACT cap in percent");
  add_mib_flag(cmd, "--margin-mib", args->margin_mib, 0, limits::kMaxGpuMiB,
               "margin on top of a known need (MiB; at most --gpu-memory-mib)");
  add_mib_flag(cmd, "--min-free-mib", args->min_free_mib, 0, limits::kMaxGpuMiB,
               "free memory required when the need is unknown (MiB; at most --gpu-memory-mib)");
  add_int_flag(cmd, "--backfill", args->backfill, 0, 1000000,
               "jobs that may start ahead of a waiting queue head, per head (0 = strict FIFO, the thesis)", false);
  add_int_flag(cmd, "--backfill-depth", args->backfill_depth, 1, 1000000,
               "queued jobs looked at behind a waiting head per decision (default 200)", false);
  cmd->add_option("--model", args->model,
                  "simulator model file: interference, power, timing and SM activity, each with its source "
                  "(default: built in, as models/sim/a100-thesis.toml)")
      ->check(non_empty());
  cmd->add_option("--policy-file", args->policy_file,
                  "TOML file of site policies ([policies.NAME] filters = [...], scorers = { NAME = WEIGHT }); "
                  "--policy NAME picks one")
      ->check(non_empty());
  cmd->add_option("--floor", args->floor,
                  "unknown: --min-free-mib applies to unknown needs only (the thesis); always: to every job, "
                  "free ≥ max(estimate + margin, min free)")
      ->capture_default_str();
  cmd->add_option("--recovery", args->recovery, "strict|loose|none (none: an OOM crash fails the job, as on plain Slurm)")
      ->capture_default_str();
  add_mib_flag(cmd, "--recovery-step-mib", args->recovery_step_mib, 1, limits::kMaxGpuMiB, "loose recovery's step (MiB)");
  cmd->add_flag("--recovery-share", args->recovery_share,
                "a recovered job that runs alone lets others join once its peak memory has been observed");
  cmd->add_flag("--adds-progress", args->adds_progress,
                "a job joins others on a GPU only if the GPU's predicted progress rises (the sharing model's "
                "interference per co-runner, the jobs' predicted SM activity)");
  add_uint_flag(cmd, "--seed", args->seed, "seed for every random choice (only --duration-jitter uses one)");
  add_real_flag(cmd, "--duration-jitter", args->duration_jitter, 0, 1,
                "scale solo durations by U[1-j, 1+j], j < 1 (default 0)");
  add_seconds_flag(cmd, "--ramp-s", args->ramp_s, 0, limits::kMaxSeconds,
                   "seconds from launch until a job's memory is allocated");
  add_seconds_flag(cmd, "--oom-detect-s", args->oom_detect_s, 0, limits::kMaxSeconds,
                   "seconds from an OOM crash until it is noticed");
  add_seconds_flag(cmd, "--slots", args->slots_s, 0, limits::kMaxSeconds,
                   "fairness time slots: a job runs this long, then checkpoints and queues again if others wait "
                   "(0 = off, the thesis)");
  add_seconds_flag(cmd, "--slot-notice", args->slot_notice_s, 0, limits::kMaxSeconds,
                   "checkpoint request this long before a slot ends (default min(600, slot / 10))");
  cmd->add_flag("--json", args->json, "print one JSON object (an array with --compare)");
  cmd->add_flag("--compare", args->compare, "run the thesis' comparison matrix");
  cmd->add_option("--report", args->report,
                  "also write a self-contained HTML report (Gantt per GPU, memory/SMACT, queue; --compare: bars)");
  CLI::App* colocation = add_sim_collocation(cmd);
  cmd->callback([args, cmd, colocation] {
    if (colocation->parsed()) return;  // `colo sim collocation …` ran instead
    args->gpu_memory_mib_given = cmd->get_option("--gpu-memory-mib")->count() > 0;
    args->report_given = cmd->get_option("--report")->count() > 0;
    args->ramp_given = cmd->get_option("--ramp-s")->count() > 0;
    args->oom_detect_given = cmd->get_option("--oom-detect-s")->count() > 0;
    run(*args, *cmd);
  });
});

}  // namespace

}  // namespace colo::cli
