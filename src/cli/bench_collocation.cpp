#include "cli/bench_collocation.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/bench_job.h"
#include "cli/number_option.h"
#include "cli/power_meter.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/one_line.h"
#include "core/parse_number.h"
#include "gpu/backend.h"
#include "gpu/fake_nvml_env.h"
#include "gpu/mps.h"
#include "gpu/nvml_backend.h"
#include "sim/models/collocation_fit.h"
#include "sim/models/power_fit.h"
#include "sim/models/sim_model.h"
#include "slurm/atomic_file.h"

namespace colo::cli {

namespace {

using Clock = std::chrono::steady_clock;

// SIGINT/SIGTERM/SIGHUP: the runs' polling loops see it and throw, so every job (in sessions of
// their own, out of the terminal's reach) and the MPS daemon are stopped on the way out.
std::atomic<int> g_interrupted{0};
void on_interrupt(int sig) { g_interrupted = sig; }

struct Args {
  std::vector<std::string> jobs, smact, mig_instances;
  std::string sharing;
  int gpu = 0;
  double warmup_s = 30, measure_s = 120, stall_s = 600, stop_grace_s = 10, idle_s = 10;
  std::string base_model, out, measurements, work_dir, fake_gpus, mps_control = "nvidia-cuda-mps-control";
  std::string solo_from;  // --solo-from: the solo runs of an earlier --measurements file
};

struct JobSpec {
  std::string name, command;
  std::optional<double> smact;  // --smact NAME=VALUE (when the GPU cannot measure it)
};

// What one run (jobs started together) measured over its window.
struct Window {
  std::vector<double> throughput;  // per job, progress per second
  std::optional<double> smact, busy;  // the sampled device's averages (when measurable)
  std::optional<double> watts;        // the board's mean power (energy counter, else power samples)
  double seconds = 0;
};

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void pause_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

class Bench {
 public:
  explicit Bench(const Args& a) : a_(a) {
    if (a.work_dir.empty()) {
      std::string tmpl = (std::filesystem::temp_directory_path() / "colo-bench-XXXXXX").string();
      if (!::mkdtemp(tmpl.data())) throw UserError("bench: cannot create a work directory in " + tmpl);
      work_ = tmpl;
    } else {
      work_ = a.work_dir;
      std::error_code ec;
      std::filesystem::create_directories(work_, ec);
      if (ec) throw UserError(fmt::format("--work-dir {}: {}", work_, ec.message()));
    }
    if (!a.fake_gpus.empty()) {
      gpu::FakeNvmlSetup setup;
      backend_ = gpu::open_fake_nvml_backend(a.fake_gpus, work_ + "/fake-nvml", &setup);
      base_env_ = setup.job_env;
    } else {
      backend_ = gpu::open_nvml_backend();
    }
    devices_ = backend_->discover();
    const gpu::DeviceInfo* d = device(a.gpu);
    if (!d) throw UserError(fmt::format("--gpu {}: no such GPU ({} found)", a.gpu, devices_.size()));
    if (!d->error.empty()) throw UserError(fmt::format("--gpu {}: {}", a.gpu, d->error));
    if (d->mig_enabled && a.solo_from.empty())
      throw UserError(fmt::format("--gpu {} has MIG enabled: the solo and shared runs need a whole GPU "
                                  "(MIG instances of another GPU go in --mig-instance, or reuse earlier solo runs "
                                  "with --solo-from FILE.json)", a.gpu));
    gpu_ = *d;
  }

  const std::string& work_dir() const { return work_; }
  const gpu::DeviceInfo& gpu() const { return gpu_; }

  // Compute slices of a MIG instance named by its UUID, and the index of its parent GPU.
  std::pair<int, std::string> mig_instance(const std::string& uuid) const {
    for (const auto& dev : devices_)
      for (const auto& m : dev.mig_instances)
        if (m.uuid == uuid) {
          std::smatch g;
          if (!std::regex_search(m.name, g, std::regex(R"(([1-7])g\.\d+gb)")))
            throw UserError(fmt::format("--mig-instance {}: cannot tell its size from its name '{}'", uuid, m.name));
          return {std::stoi(g[1].str()), m.name};
        }
    std::string known;
    for (const auto& dev : devices_)
      for (const auto& m : dev.mig_instances) known += fmt::format("{}{} ({})", known.empty() ? "" : ", ", m.uuid, m.name);
    throw UserError(fmt::format("--mig-instance {}: no such MIG instance; {}", uuid,
                                known.empty() ? "no GPU here has MIG enabled" : "there are: " + known));
  }

  // Starts `jobs` at once with their environments; `sample` is the GPU index sampled for SMACT
  // and busy share (-1: none).
  Window run(const std::vector<const JobSpec*>& jobs, const std::vector<BenchJob::Env>& envs, int sample,
             const std::string& tag) {
    std::vector<std::unique_ptr<BenchJob>> run;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      BenchJob::Env env = base_env_;
      env.insert(env.end(), envs[i].begin(), envs[i].end());
      run.push_back(std::make_unique<BenchJob>(jobs[i]->name, jobs[i]->command, env, work_,
                                               fmt::format("{}-{}", tag, jobs[i]->name)));
    }
    for (auto& j : run) j->start();
    auto check_alive = [&](const char* when) {
      if (g_interrupted) throw UserError(fmt::format("bench: interrupted by signal {} (run {}); its jobs are stopped", g_interrupted.load(), tag));
      for (auto& j : run)
        if (j->ended()) {
          const std::string tail = j->log_tail(400);
          throw UserError(fmt::format("bench: job {} {} {} (run {}; it must run until stopped){}", j->name(),
                                      j->how_it_ended(), when, tag, tail.empty() ? "" : "; its output ends: " + tail));
        }
    };
    // Every job's first report after now: (value, seconds since `origin`) at the instant the
    // new value is seen (all jobs polled together every 10 ms), so both ends of a window are
    // report instants and a job that reports seldom is neither over- nor under-counted.
    auto next_reports = [&](Clock::time_point origin, double deadline_s, const char* when) {
      std::vector<std::optional<double>> before;
      for (auto& j : run) before.push_back(j->progress());
      std::vector<std::optional<std::pair<double, double>>> seen(run.size());
      for (std::size_t left = run.size(); left > 0;) {
        check_alive(when);
        for (std::size_t i = 0; i < run.size(); ++i) {
          if (seen[i]) continue;
          const auto v = run[i]->progress();
          if (v && (!before[i] || *v > *before[i])) seen[i] = std::pair{*v, since(origin)}, --left;
        }
        if (left == 0) break;
        if (since(origin) > deadline_s) {
          std::string quiet;
          for (std::size_t i = 0; i < run.size(); ++i)
            if (!seen[i]) quiet += (quiet.empty() ? "" : ", ") + run[i]->name();
          throw UserError(fmt::format("bench: job {} made no progress report within {:g} s {} (run {}; a job writes "
                                      "its progress to $COLO_BENCH_PROGRESS: `colo bench collocation --help`)",
                                      quiet, a_.stall_s, when, tag));
        }
        pause_s(0.01);
      }
      std::vector<std::pair<double, double>> out;
      for (auto& x : seen) out.push_back(*x);
      return out;
    };
    const auto origin = Clock::now();
    // Start-up over (every job has reported), then the warm-up.
    next_reports(origin, a_.stall_s, "after starting");
    for (const auto warm = Clock::now(); since(warm) < a_.warmup_s; pause_s(0.05)) check_alive("during the warm-up");
    // The window: from each job's next report, the GPU sampled every second, to each job's
    // first report after measure_s.
    const auto start = next_reports(origin, since(origin) + a_.stall_s, "after the warm-up");
    PowerMeter power;
    if (sample >= 0) power.add(backend_->sample(sample), Clock::now());  // rates (GPM) need a first sample
    double smact_sum = 0, busy_sum = 0;
    int smact_n = 0, busy_n = 0;
    auto take_sample = [&] {
      const gpu::DeviceSample s = backend_->sample(sample);
      if (s.smact) smact_sum += std::clamp(*s.smact, 0.0, 1.0), ++smact_n;
      if (s.gpu_util) busy_sum += std::clamp(*s.gpu_util, 0.0, 1.0), ++busy_n;
      power.add(s, Clock::now());
    };
    const auto window = Clock::now();
    auto next_sample = window + std::chrono::seconds(1);
    while (since(window) < a_.measure_s) {
      check_alive("during the measurement");
      if (sample >= 0 && Clock::now() >= next_sample) {
        take_sample();
        next_sample += std::chrono::seconds(1);
      }
      pause_s(0.05);
    }
    if (sample >= 0) take_sample();  // the rest of the window (and the only rate of a short one)
    const auto end = next_reports(origin, since(origin) + a_.stall_s, "during the measurement");
    Window w;
    for (std::size_t i = 0; i < run.size(); ++i)
      w.throughput.push_back((end[i].first - start[i].first) / (end[i].second - start[i].second));
    w.seconds = since(window);
    for (auto& j : run) j->stop(a_.stop_grace_s);
    if (smact_n) w.smact = smact_sum / smact_n;
    if (busy_n) w.busy = busy_sum / busy_n;
    w.watts = power.watts();
    return w;
  }

  // The board's mean power over `seconds` with no job of ours running (the power model's
  // idle_watts), and how many processes were on the GPU meanwhile (others' jobs spoil it).
  std::pair<std::optional<double>, std::size_t> idle(double seconds) {
    PowerMeter power;
    gpu::DeviceSample s = backend_->sample(a_.gpu);
    power.add(s, Clock::now());
    std::size_t processes = s.memory.process_mib.size();
    for (const auto t0 = Clock::now(); since(t0) < seconds;) {
      if (g_interrupted) throw UserError(fmt::format("bench: interrupted by signal {} (idle window)", g_interrupted.load()));
      pause_s(std::min(1.0, std::max(0.0, seconds - since(t0))));
      s = backend_->sample(a_.gpu);
      power.add(s, Clock::now());
      processes = std::max(processes, s.memory.process_mib.size());
    }
    return {power.watts(), processes};
  }

  BenchJob::Env on_gpu(const std::string& uuid) const { return {{"CUDA_VISIBLE_DEVICES", uuid}}; }

  gpu::MpsOptions mps_options() const {
    gpu::MpsOptions o;
    o.control_binary = a_.mps_control;
    o.root_dir = work_ + "/mps";
    return o;
  }

 private:
  const gpu::DeviceInfo* device(int index) const {
    for (const auto& d : devices_)
      if (d.index == index) return &d;
    return nullptr;
  }

  const Args& a_;
  std::string work_;
  std::unique_ptr<gpu::GpuBackend> backend_;
  std::vector<gpu::DeviceInfo> devices_;
  gpu::DeviceInfo gpu_;
  BenchJob::Env base_env_;
};

std::vector<JobSpec> parse_jobs(const Args& a) {
  std::vector<JobSpec> jobs;
  const std::regex name_re("[A-Za-z0-9_.-]{1,64}");
  for (const std::string& t : a.jobs) {
    const auto eq = t.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 >= t.size())
      throw UserError(fmt::format("--job '{}': expected NAME=COMMAND", t));
    JobSpec j{t.substr(0, eq), t.substr(eq + 1), std::nullopt};
    if (!std::regex_match(j.name, name_re))
      throw UserError(fmt::format("--job '{}': NAME must be 1-64 letters, digits, '_', '.' or '-'", t));
    for (const JobSpec& o : jobs)
      if (o.name == j.name) throw UserError(fmt::format("--job {}: the name is given twice", j.name));
    jobs.push_back(std::move(j));
  }
  for (const std::string& t : a.smact) {
    const auto eq = t.find('=');
    if (eq == std::string::npos) throw UserError(fmt::format("--smact '{}': expected NAME=VALUE (0..1)", t));
    const std::string name = t.substr(0, eq);
    auto it = std::find_if(jobs.begin(), jobs.end(), [&](const JobSpec& j) { return j.name == name; });
    if (it == jobs.end()) throw UserError(fmt::format("--smact '{}': no --job is named {}", t, name));
    it->smact = parse_real(t.substr(eq + 1), fmt::format("--smact {}", name), 0, 1);
  }
  return jobs;
}

void check(const Args& a) {
  if (a.sharing != "streams" && a.sharing != "mps" && a.sharing != "mig")
    throw UserError(fmt::format("--sharing must be streams, mps or mig, got '{}'", a.sharing));
  if (a.sharing == "mig" && a.mig_instances.empty())
    throw UserError("--sharing mig needs --mig-instance UUID (the MIG instances to run each job on; colo gpus lists them)");
  if (a.sharing != "mig" && !a.mig_instances.empty()) throw UserError("--mig-instance is for --sharing mig");
  if (a.sharing != "mig" && a.jobs.size() < 2) throw UserError("bench collocation: give at least 2 --job (pairs run together)");
  if (a.jobs.empty()) throw UserError("bench collocation: give the jobs with --job NAME=COMMAND");
  if (a.gpu < 0) throw UserError(fmt::format("--gpu must be ≥ 0, got {}", a.gpu));
  auto seconds = [](const char* flag, double v, double lo) {
    if (!(v >= lo && v <= limits::kMaxSeconds)) throw UserError(fmt::format("{} must be in [{:g}, {:g}] s, got {:g}", flag, lo, limits::kMaxSeconds, v));
  };
  seconds("--warmup-s", a.warmup_s, 0);
  seconds("--measure-s", a.measure_s, 0.1);
  seconds("--stall-timeout-s", a.stall_s, 1);
  seconds("--idle-s", a.idle_s, 0);
  if (a.out.empty()) throw UserError("bench collocation: --out MODEL.toml is required");
  // Known before an hour of runs, not after.
  for (const std::string& path : {a.out, a.measurements}) {
    if (path.empty()) continue;
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      throw UserError(fmt::format("bench collocation: cannot write {}: it is a directory", path));
    const std::filesystem::path parent = std::filesystem::absolute(path).parent_path();
    if (::access(parent.c_str(), W_OK) != 0)
      throw UserError(fmt::format("bench collocation: cannot write {}: {} is not a writable directory", path, parent.string()));
  }
}

std::string fmt_opt(const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : "-"; }

void run(const Args& a) {
  check(a);
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  std::vector<JobSpec> jobs = parse_jobs(a);
  sim::SimModel model = sim::load_sim_model(a.base_model.empty() ? sim::default_sim_model_path() : a.base_model);
  Bench bench(a);
  for (const std::string& uuid : a.mig_instances) bench.mig_instance(uuid);  // all known before any run
  const std::string gpu_text = fmt::format("{} ({})", bench.gpu().name, bench.gpu().uuid);
  const std::string when = utc_now();
  std::cerr << fmt::format("bench: {} on GPU {} {}; logs and progress files in {}\n", a.sharing, a.gpu, gpu_text,
                           bench.work_dir());
  nlohmann::json meas = {{"format", "colo-bench-collocation 1"}, {"gpu", {{"index", a.gpu}, {"name", bench.gpu().name}, {"uuid", bench.gpu().uuid}}},
                         {"sharing", a.sharing}, {"date", when}, {"warmup_s", a.warmup_s}, {"measure_s", a.measure_s}};

  // 1. Each job alone on the whole GPU.
  struct Solo {
    double throughput = 0;
    std::optional<double> smact, busy, watts;
  };
  std::vector<Solo> solo;
  if (!a.solo_from.empty()) {
    // The baseline of an earlier run (e.g. measured before the GPU was switched to MIG mode):
    // the same jobs, by name and command, on a GPU of the same model.
    nlohmann::json old;
    try {
      std::error_code ec;
      if (!std::filesystem::is_regular_file(a.solo_from, ec))
        throw UserError(fmt::format("--solo-from {}: not a file", a.solo_from));
      std::ifstream in(a.solo_from);
      if (!in) throw UserError(fmt::format("--solo-from {}: cannot read it", a.solo_from));
      old = nlohmann::json::parse(in);
      if (old.value("format", "") != "colo-bench-collocation 1" || !old.contains("solo") || !old["solo"].is_array())
        throw UserError(fmt::format("--solo-from {}: not a `colo bench collocation --measurements` file", a.solo_from));
      const std::string old_gpu = old.at("gpu").at("name").get<std::string>();
      if (old_gpu != bench.gpu().name)
        throw UserError(fmt::format("--solo-from {}: measured on {}, this GPU is {}", a.solo_from, old_gpu, bench.gpu().name));
      for (const JobSpec& j : jobs) {
        const auto it = std::find_if(old["solo"].begin(), old["solo"].end(), [&](const nlohmann::json& x) {
          return x.at("job").get<std::string>() == j.name;
        });
        if (it == old["solo"].end())
          throw UserError(fmt::format("--solo-from {}: has no solo run of job {}", a.solo_from, j.name));
        if (it->at("command").get<std::string>() != j.command)
          throw UserError(fmt::format("--solo-from {}: job {} ran another command there", a.solo_from, j.name));
        // Every value checked here, by job and field: a bad one found after the pair runs (or
        // one that silently drops pairs from the fit) would waste them.
        auto value = [&](const char* field, double lo, double hi, bool optional) -> std::optional<double> {
          const bool present = it->contains(field) && !(*it)[field].is_null();
          if (!present && optional) return std::nullopt;
          if (!present || !(*it)[field].is_number())
            throw UserError(fmt::format("--solo-from {}: job {}: '{}' must be a number", a.solo_from, j.name, field));
          const double v = (*it)[field].get<double>();
          if (!(v >= lo && v <= hi))
            throw UserError(fmt::format("--solo-from {}: job {}: '{}' is {:g}, outside [{:g}, {:g}]", a.solo_from, j.name,
                                        field, v, lo, hi));
          return v;
        };
        // --smact NAME=… stands in for the file's SMACT, which may then be missing.
        Solo x{*value("throughput", 0, std::numeric_limits<double>::max(), false), value("smact", 0, 1, j.smact.has_value()),
               value("busy", 0, 1, true), value("watts", 0, 10000, true)};
        if (!(x.throughput > 0))
          throw UserError(fmt::format("--solo-from {}: job {}: 'throughput' must be > 0", a.solo_from, j.name));
        nlohmann::json used = *it;
        if (j.smact) {
          // What the fit uses is what the measurements file records (a re-fit from it agrees).
          x.smact = j.smact;
          used["smact"] = *j.smact;
          used["smact_source"] = "--smact";
          // As for a measured run: utilisation below SMACT means the GPU did not see the job as
          // the given SMACT says; the model's default busy share then.
          if (x.busy && *x.busy + 0.05 < *x.smact) {
            x.busy.reset();
            used["busy"] = nullptr;
          }
        }
        meas["solo"].push_back(used);
        solo.push_back(x);
      }
      meas["solo_from"] = a.solo_from;
    } catch (const nlohmann::json::exception& e) {
      throw UserError(fmt::format("--solo-from {}: {}", a.solo_from, one_line(e.what())));
    }
  }
  // The GPU with none of our jobs, before any runs (after --solo-from is known good): the power
  // model's idle level.
  std::optional<double> idle_watts;
  if (a.idle_s > 0) {
    const auto [watts, processes] = bench.idle(a.idle_s);
    meas["idle"] = {{"seconds", a.idle_s}, {"watts", watts ? nlohmann::json(*watts) : nlohmann::json(nullptr)},
                    {"processes", processes}};
    if (processes > 0)
      std::cerr << fmt::format("bench: {} other process(es) used GPU {} during the idle window: its power is not "
                               "the idle level and is not fitted\n", processes, a.gpu);
    else if (watts && !(*watts > 0 && *watts <= 10000))
      std::cerr << fmt::format("bench: the idle window read {:g} W, not a board's power: not fitted\n", *watts);
    else
      idle_watts = watts;
    std::cerr << fmt::format("bench: idle: {} W\n", fmt_opt(watts));
  }

  for (const JobSpec& j : jobs) {
    if (!a.solo_from.empty()) break;
    const Window w = bench.run({&j}, {bench.on_gpu(bench.gpu().uuid)}, a.gpu, "solo");
    Solo s{w.throughput[0], j.smact ? j.smact : w.smact, w.busy, w.watts};
    if (!s.smact)
      throw UserError(fmt::format("bench: GPU {} gave no SM activity for job {} ({}); give each job's solo SM "
                                  "activity with --smact NAME=VALUE", a.gpu, j.name, bench.gpu().caps.smact_reason));
    // A kernel runs whenever SMs are active, so utilisation below SMACT means the GPU did not see
    // the job (e.g. --smact given for a job the GPU cannot attribute): the model's default then.
    if (s.busy && *s.busy + 0.05 < *s.smact) s.busy.reset();
    std::cerr << fmt::format("bench: {} alone: {:.4g}/s, SMACT {}, busy {}, {} W\n", j.name, s.throughput, fmt_opt(s.smact),
                             fmt_opt(s.busy), fmt_opt(s.watts));
    meas["solo"].push_back({{"job", j.name}, {"command", j.command}, {"throughput", s.throughput}, {"smact", *s.smact},
                            {"smact_source", j.smact ? "--smact" : "measured"},
                            {"busy", s.busy ? nlohmann::json(*s.busy) : nlohmann::json(nullptr)},
                            {"watts", s.watts ? nlohmann::json(*s.watts) : nlohmann::json(nullptr)}});
    solo.push_back(s);
  }
  const std::string names = [&] {
    std::string s;
    for (const JobSpec& j : jobs) s += (s.empty() ? "" : ", ") + j.name;
    return s;
  }();
  const std::string file_note = a.measurements.empty() ? "" : "; measurements " + std::filesystem::path(a.measurements).filename().string();
  // The power model's data: each job alone, then every shared window (sim/models/power_fit.h).
  std::vector<sim::PowerSolo> power_solo;
  std::vector<sim::PowerShared> power_shared;
  for (const Solo& x : solo) power_solo.push_back({*x.smact, x.watts.value_or(std::nan(""))});

  if (a.sharing == "mig") {
    // 2m. Each job alone on each MIG instance.
    std::vector<sim::MigRun> runs;
    for (const std::string& uuid : a.mig_instances) {
      const auto [slices, name] = bench.mig_instance(uuid);
      for (std::size_t i = 0; i < jobs.size(); ++i) {
        const Window w = bench.run({&jobs[i]}, {bench.on_gpu(uuid)}, -1, fmt::format("mig{}", slices));
        const double slowdown = solo[i].throughput / w.throughput[0];
        runs.push_back({slices, *solo[i].smact, slowdown});
        std::cerr << fmt::format("bench: {} on {}: {:.4g}/s, {:+.1f} %\n", jobs[i].name, name, w.throughput[0], 100 * (slowdown - 1));
        meas["mig"].push_back({{"job", jobs[i].name}, {"instance", uuid}, {"name", name}, {"compute_slices", slices},
                               {"throughput", w.throughput[0]}, {"slowdown", slowdown}});
      }
    }
    const std::map<int, std::pair<const char*, double*>> by_slices = {
        {1, {"mig.capacity_1g", &model.mig.capacity_1g}}, {2, {"mig.capacity_2g", &model.mig.capacity_2g}},
        {3, {"mig.capacity_3g", &model.mig.capacity_3g}}, {4, {"mig.capacity_4g", &model.mig.capacity_4g}},
        {7, {"mig.capacity_7g", &model.mig.capacity_7g}}};
    for (const auto& [slices, target] : by_slices) {
      const auto fit = sim::fit_mig_capacity(runs, slices);
      if (!fit) continue;
      *target.second = fit->value;
      model.sources[target.first] = fmt::format(
          "colo bench collocation, {} on {}, {}: jobs {} alone on {}g instances, {} slowed runs, rms {:.3f}{}",
          gpu_text, a.mig_instances.size() == 1 ? "1 instance" : fmt::format("{} instances", a.mig_instances.size()),
          when, names, slices, fit->observations, fit->rms, file_note);
      meas["fitted"][target.first] = {{"value", fit->value}, {"observations", fit->observations}, {"rms", fit->rms}};
    }
  } else {
    // 2. Every pair at once on the whole GPU (under MPS: through one MPS control daemon).
    std::optional<gpu::MpsDaemon> mps;
    BenchJob::Env env = bench.on_gpu(bench.gpu().uuid);
    if (a.sharing == "mps") {
      mps.emplace(bench.mps_options(), bench.gpu().uuid);
      mps->start();
      for (const auto& kv : mps->client_env()) env.push_back(kv);
    }
    std::vector<sim::CoRun> runs;
    for (std::size_t i = 0; i < jobs.size(); ++i)
      for (std::size_t k = i + 1; k < jobs.size(); ++k) {
        const Window w = bench.run({&jobs[i], &jobs[k]}, {env, env}, a.gpu, "pair");
        sim::CoRun r;
        for (std::size_t x : {i, k}) {
          r.smact.push_back(*solo[x].smact);
          r.busy.push_back(solo[x].busy);
        }
        r.slowdown = {solo[i].throughput / w.throughput[0], solo[k].throughput / w.throughput[1]};
        std::cerr << fmt::format("bench: {} + {}: {:+.1f} % / {:+.1f} %\n", jobs[i].name, jobs[k].name,
                                 100 * (r.slowdown[0] - 1), 100 * (r.slowdown[1] - 1));
        const double work = r.smact[0] / r.slowdown[0] + r.smact[1] / r.slowdown[1];
        if (w.watts)
          power_shared.push_back({{static_cast<int>(i), static_cast<int>(k)}, {1 / r.slowdown[0], 1 / r.slowdown[1]}, *w.watts});
        meas["pairs"].push_back({{"jobs", {jobs[i].name, jobs[k].name}}, {"throughput", w.throughput}, {"slowdown", r.slowdown},
                                 {"smact", w.smact ? nlohmann::json(*w.smact) : nlohmann::json(nullptr)},
                                 {"work", work}, {"watts", w.watts ? nlohmann::json(*w.watts) : nlohmann::json(nullptr)}});
        runs.push_back(std::move(r));
      }
    if (mps) mps->stop();
    const std::string what = fmt::format("colo bench collocation, {} on {}, {}: {} pair(s) of jobs {}", a.sharing, gpu_text,
                                         when, runs.size(), names);
    if (a.sharing == "mps") {
      const auto fit = sim::fit_mps_interference(runs);
      if (!fit) throw UserError("bench: no usable pair measurement to fit MPS interference to");
      model.mps.interference = fit->value;
      model.sources["mps.interference"] = fmt::format("{}, {} slowdowns, rms {:.3f}{}", what, fit->observations, fit->rms, file_note);
      meas["fitted"]["mps.interference"] = {{"value", fit->value}, {"observations", fit->observations}, {"rms", fit->rms}};
    } else {
      const auto fit = sim::fit_streams(runs, model.streams.busy_floor);
      if (!fit) throw UserError("bench: no usable pair measurement to fit the streams model to");
      model.streams.switch_overhead = fit->switch_overhead.value;
      model.streams.slice_wait = fit->slice_wait.value;
      for (const auto& [key, p] : {std::pair{"streams.switch_overhead", fit->switch_overhead}, std::pair{"streams.slice_wait", fit->slice_wait}}) {
        model.sources[key] = fmt::format("{}, {} slowdowns fitted jointly, rms {:.3f}{}", what, p.observations, p.rms, file_note);
        meas["fitted"][key] = {{"value", p.value}, {"observations", p.observations}, {"rms", p.rms}};
      }
    }
  }
  // 3. The power model: idle from the idle window, the busy floor from the shared windows, the
  // slope from the solo runs.
  const auto fit = sim::fit_power(idle_watts, power_solo, power_shared, model.power.busy_watts);
  if (fit) {
    const std::string what = fmt::format("colo bench collocation, {} on {}, {}", a.sharing, gpu_text, when);
    std::string used;
    for (int i : fit->solo_used) used += (used.empty() ? "" : ", ") + jobs[static_cast<std::size_t>(i)].name;
    std::string bound;
    if (fit->busy_capped_at_solo)
      bound = fmt::format(" (least squares gave {:.1f} W, above a job's own power alone: capped at it)", fit->busy_least_squares);
    else if (fit->busy_raised_to_idle && fit->busy_fitted)
      bound = fmt::format(" (least squares gave {:.1f} W, below the measured idle: raised to it)", fit->busy_least_squares);
    if (fit->busy_fitted)
      model.sources["power.busy_watts"] = fmt::format(
          "{}: the floor under which each job's dynamic power, scaled by its rate, adds up to the power of {} shared "
          "window(s) of jobs {}, rms {:.1f} W{}{}", what, fit->busy_watts.observations, names, fit->shared_rms, bound, file_note);
    else
      model.sources["power.busy_watts"] = fmt::format(
          "{}: no shared window could fix it (none, or rates summing to about 1); the base model's value{}", what,
          fit->busy_raised_to_idle ? ", raised to the measured idle" : "");
    model.power.busy_watts = fit->busy_watts.value;
    model.power.max_watts = fit->max_watts.value;
    model.sources["power.max_watts"] = fmt::format(
        "{}: busy_watts + the watts per unit of SMACT of {} job(s) alone ({}; least squares), rms {:.1f} W about that "
        "line{}", what, fit->max_watts.observations, used, fit->solo_line_rms, file_note);
    meas["fitted"]["power.busy_watts"] = {{"value", fit->busy_watts.value}, {"observations", fit->busy_watts.observations}, {"rms", fit->shared_rms}};
    meas["fitted"]["power.max_watts"] = {{"value", fit->max_watts.value}, {"observations", fit->max_watts.observations}, {"rms", fit->solo_line_rms}};
  } else {
    std::string why = "no GPU power readings (nvmlDeviceGetTotalEnergyConsumption and nvmlDeviceGetPowerUsage gave none)";
    for (const auto& x : power_solo)
      if (!std::isnan(x.watts)) why = "no solo run with a usable power reading (0 < W ≤ 10000) and SMACT ≥ 0.05";
    std::cerr << "bench: power model not fitted: " << why << (idle_watts ? "; only the idle level is" : "") << "\n";
  }
  if (idle_watts) {
    // Measured: the idle level, with the busy and max levels kept in the model file's order.
    model.power.idle_watts = *idle_watts;
    model.sources["power.idle_watts"] = fmt::format("colo bench collocation on {}, {}: board power over {:g} s with no job{}",
                                                    gpu_text, when, a.idle_s, file_note);
    meas["fitted"]["power.idle_watts"] = {{"value", *idle_watts}, {"observations", 1}, {"rms", 0.0}};
    if (model.power.busy_watts < *idle_watts) {
      model.power.busy_watts = *idle_watts;
      model.sources["power.busy_watts"] += "; raised to the measured idle";
    }
    if (model.power.max_watts < model.power.busy_watts) {
      model.power.max_watts = model.power.busy_watts;
      model.sources["power.max_watts"] += "; raised to busy_watts";
    }
  } else if (model.power.idle_watts > model.power.busy_watts) {
    model.power.idle_watts = model.power.busy_watts;
    model.sources["power.idle_watts"] = "not measured (--idle-s 0 or a busy GPU): the base model's was above busy_watts, set to it";
  }
  const std::string text = sim::write_sim_model(
      model, fmt::format("colo's simulator model (`colo sim --model FILE`), written by `colo bench collocation` on {}, {}.\n"
                         "The parameters it measured name it as their source; the others are the base model's ({}).",
                         gpu_text, when, a.base_model.empty() ? "built in" : a.base_model));
  const std::string meas_text = meas.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  // Written whole, synced and renamed: either the old file or the new one.
  slurm::write_file_atomically(a.out, text, 0644);
  if (!a.measurements.empty()) slurm::write_file_atomically(a.measurements, meas_text, 0644);
  if (meas.contains("fitted"))
    for (const auto& [key, v] : meas["fitted"].items())
      std::cout << fmt::format("{} = {:.4f}  ({} observations, rms {:.3f})\n", key, v["value"].get<double>(),
                               v["observations"].get<int>(), v["rms"].get<double>());
  else
    std::cout << "nothing fitted: no job was slowed on any instance (each only bounds the capacity from below)\n";
  std::cout << fmt::format("model written to {} (colo sim --model {})\n", a.out, a.out);
}

}  // namespace

CLI::App* add_bench_collocation(CLI::App* bench) {
  auto a = std::make_shared<Args>();
  CLI::App* c = bench->add_subcommand(
      "collocation",
      "run training jobs alone and in pairs (streams, MPS) or alone on MIG instances, and fit the simulator's sharing "
      "model to their slowdowns (thesis ch. 4). Each job writes its progress (a growing number) to $COLO_BENCH_PROGRESS");
  c->add_option("--job", a->jobs, "NAME=COMMAND: a training job that runs until stopped (repeat; ≥ 2 for streams/MPS)");
  c->add_option("--sharing", a->sharing, "streams | mps | mig")->required();
  add_int_flag(c, "--gpu", a->gpu, 0, 1023, "GPU index for the solo and shared runs (a whole GPU; default 0)", false);
  c->add_option("--mig-instance", a->mig_instances, "with --sharing mig: a MIG instance UUID to run each job alone on (repeat)");
  c->add_option("--smact", a->smact, "NAME=VALUE: a job's solo SM activity (0..1) when the GPU cannot measure it");
  // Through core/parse_number (an empty value is an error, not 0; units such as 2min work).
  add_seconds_flag(c, "--warmup-s", a->warmup_s, 0, limits::kMaxSeconds, "seconds each run trains before its window (default 30)");
  add_seconds_flag(c, "--measure-s", a->measure_s, 0.1, limits::kMaxSeconds, "seconds of each run's measurement window (default 120)");
  add_seconds_flag(c, "--idle-s", a->idle_s, 0, limits::kMaxSeconds,
                   "seconds the GPU's idle power is read before any job starts (0: not measured; default 10)");
  add_seconds_flag(c, "--stall-timeout-s", a->stall_s, 1, limits::kMaxSeconds, "a job with no progress this long is an error (default 600)");
  c->add_option("--base-model", a->base_model, "model file whose other parameters are kept (default: built in)");
  c->add_option("--out", a->out, "the fitted model file to write (colo sim --model)")->required();
  c->add_option("--measurements", a->measurements, "also write every measurement as JSON");
  c->add_option("--solo-from", a->solo_from,
                "the solo runs of an earlier --measurements file of the same jobs on the same GPU model, instead of "
                "running them again (a GPU now in MIG mode)");
  c->add_option("--work-dir", a->work_dir, "where progress files and job logs go (default: a new temporary directory)");
  c->add_option("--fake-gpus", a->fake_gpus, "run on the in-tree fake NVML (tests, demos), e.g. 1x40GiB")
      ->check(non_empty());
  c->add_option("--mps-control", a->mps_control, "the MPS control binary (--sharing mps)")->capture_default_str();
  c->callback([a] {
    try {
      run(*a);
    } catch (const gpu::GpuError& e) {  // no driver, a lost GPU: the user's machine, not a bug
      throw UserError(fmt::format("bench: {}{}", e.what(), a->fake_gpus.empty() ? " (--fake-gpus 1x40GiB tries the harness on the fake NVML)" : ""));
    }
  });
  return c;
}

}  // namespace colo::cli
