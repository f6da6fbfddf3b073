// colo estimate: peak GPU memory of a training job before it runs.
//   colo estimate --summary FILE --batch N --optimizer adam --estimator allocsim [--gpu a100-40gb] [--json]
//   colo estimate --probe torchvision:resnet50 --input 3x224x224 --batch 128 --optimizer adam
//                 [--amp bf16] [--checkpointing] --estimator trace|faketensor [--json]
//   colo estimate --trace FILE --estimator trace|faketensor   (a trace the probe wrote before)
//   colo estimate --script train.py [--data-parallel N] -- ARGS   (the user's own script, unmodified)
//   colo estimate eval --dataset FILE --format gpumemnet-cnn|gpumemnet-mlp|carma-workloads
//                      --estimator NAME [--split all|train|test] [--json]
//   colo estimate calibrate --dataset FILE --format gpumemnet-cnn --split train --gpu a100-40gb
//                      [--out calibration/a100-40gb.json]
//   (writes the profile, <stem>.fit-<format>.json (fit results) and <stem>.fit-<format>-inputs.csv)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command_registry.h"
#include "cli/estimate_smact.h"
#include "cli/number_option.h"
#include "cli/output_file.h"
#include "cli/probe_options.h"
#include "cli/progress.h"
#include "core/error.h"
#include "core/one_line.h"
#include "core/limits.h"
#include "estimate/allocator/allocator_settings.h"
#include "estimate/calibration/calibration_fit.h"
#include "estimate/calibration/trace_fit.h"
#include "estimate/trace/trace_library.h"
#include "estimate/calibration/calibration_profile.h"
#include "estimate/evaluation/dataset.h"
#include "estimate/estimator.h"
#include "estimate/evaluation/evaluation.h"
#include "estimate/graph/parsers.h"
#include "estimate/trace/probe_runner.h"

namespace {

using namespace colo::estimate;
using colo::cli::check_output_path;
using colo::cli::write_output_file;

struct EstimateOpts {
  ProbeRequest probe;
  std::string trace;
  double probe_timeout = 300;
  bool probe_timeout_given = false;
  std::string summary, optimizer = "adam", estimator = "auto", gpu = "a100-40gb";
  std::int64_t batch = 0, seq_len = 0;
  std::optional<long long> stated;
  bool json = false;
  bool optimizer_given = false;  // --optimizer was on the command line (its default is adam)
  bool gpus_given = false;       // --data-parallel was on the command line
};
struct EvalOpts {
  std::string dataset, format, estimator = "allocsim", split = "all", gpu = "a100-40gb", optimizer = "adam", traces, keep_traces;
  bool json = false, rows = false;
};
struct CalOpts {
  std::string dataset, format = "gpumemnet-cnn", split = "train", gpu = "a100-40gb", out, optimizer = "adam";
  std::string estimator = "allocsim", traces;  // --estimator trace: fit the trace estimator's constants
  double max_under = 0.05;
  bool out_given = false;  // --out was on the command line (an empty one is an error, not "default")
};

// Where calibrate writes the profile: --out (its directory must exist), else calibration/<gpu>.json
// (the directory is created: it is where profiles are looked up).
std::filesystem::path calibrate_out(const CalOpts& o) {
  if (!o.out_given) {
    std::filesystem::create_directories("calibration");
    return "calibration/" + o.gpu + ".json";
  }
  check_output_path(o.out, "--out");
  return o.out;
}

void print(const EstimateOpts& o, const Estimate& e, nlohmann::ordered_json j) {
  if (!o.json) {
    std::cout << e.mib << " MiB  (" << e.estimator << ": " << e.explanation << ")\n";
    return;
  }
  j["estimate_mib"] = e.mib;
  j["estimator"] = e.estimator;
  if (e.peak_mib > 0) j["peak_mib"] = std::round(e.peak_mib * 10) / 10;
  j["explanation"] = e.explanation;
  j["gpu"] = o.gpu;
  std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

// --probe / --trace: the trace and faketensor estimators (auto picks trace).
void run_traced(const EstimateOpts& o) {
  if (!o.summary.empty()) throw colo::UserError("estimate: give --probe/--trace or --summary, not both");
  if (!o.probe.model.empty() && !o.trace.empty()) throw colo::UserError("estimate: give --probe or --trace, not both");
  if (!o.probe.script.empty() && !o.trace.empty()) throw colo::UserError("estimate: give --script or --trace, not both");
  if (!o.probe.script.empty() && !o.probe.model.empty()) throw colo::UserError("estimate: give --probe or --script, not both");
  if (o.estimator != "trace" && o.estimator != "faketensor" && o.estimator != "auto")
    throw colo::UserError("estimate: --estimator " + o.estimator + " reads --summary; with --probe/--trace use trace, faketensor or auto");
  const auto t0 = std::chrono::steady_clock::now();
  ProbeTrace trace;
  double probe_seconds = 0;
  // A flag the traced path would not use is refused, not ignored: the answer would not be for it.
  if (!o.trace.empty() && (o.batch > 0 || o.optimizer_given))
    throw colo::UserError(fmt::format("estimate: {} is recorded in the trace file; it cannot be changed with --trace",
                                      o.batch > 0 ? "--batch" : "--optimizer"));
  if (!o.probe.script.empty() && o.optimizer_given)
    throw colo::UserError("estimate: --optimizer is the script's own choice when a script is probed");
  if (o.seq_len > 0)
    throw colo::UserError("estimate: --seq-len is for --summary; a probed model's sequence length is its input (--input)");
  if (!o.trace.empty()) {
    trace = load_probe_trace(o.trace);
  } else {
    ProbeRequest req = o.probe;
    if (req.script.empty()) {
      req.batch = o.batch;
      req.optimizer = o.optimizer;
    } else if (o.batch > 0) {
      throw colo::UserError("estimate: --batch is the script's own choice when a script is probed (pass it in the script's arguments)");
    } else if (req.torchrun > 0 && !o.gpus_given) {
      req.data_parallel = req.torchrun;  // torchrun's processes each have a GPU
    }
    // The probe records the allocator settings it runs with: refuse bad ones before it runs.
    (void)allocator_conf_from_environment();  // parsing throws on a bad value
    ProbeLimits lim;
    lim.timeout_seconds = o.probe_timeout;
    auto run = run_probe(req, lim);
    trace = std::move(run.trace);
    probe_seconds = run.seconds;
  }
  EstimateRequest req;
  req.gpu = o.gpu;
  req.batch = trace.header.value("batch", std::int64_t{0});
  req.trace = &trace;
  const Estimate e = make_estimator(o.estimator)->estimate(req);
  nlohmann::ordered_json j;
  j["model"] = trace.header.value("model", std::string());
  if (trace.header.contains("batch")) j["batch"] = req.batch;
  else j["batch"] = nullptr;  // a probed script chooses its own batch; the probe does not know which tensor it is
  j["optimizer"] = trace.header.value("optimizer", std::string());
  if (trace.header.contains("script")) j["script"] = trace.header.value("script", std::string());
  j["probe_seconds"] = std::round(probe_seconds * 1000) / 1000;
  j["probe_torch"] = trace.header.value("torch", std::string());
  if (trace.header.contains("python")) j["probe_python"] = trace.header.value("python", std::string());
  j["seconds"] = std::round(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1000) / 1000;
  print(o, e, j);
}

void run_single(const EstimateOpts& o) {
  if (!o.probe.script_args.empty() && o.probe.script.empty())
    throw colo::UserError(fmt::format("estimate: unexpected argument '{}' (script arguments follow --script FILE --)",
                                      colo::one_line(o.probe.script_args.front())));
  if (o.probe.script.empty()) colo::cli::check_probe_only_flags(o.probe, false);  // a probed script has its own checks
  // Flags the chosen path would not use are refused, not ignored: the answer would not be for them.
  if (o.probe.torchrun > 0 && o.probe.script.empty())
    throw colo::UserError("estimate: --nproc-per-node goes with --script (torchrun runs a script)");
  if (!o.probe.python.empty() && o.probe.script.empty())
    throw colo::UserError("estimate: --python goes with --script (the Python the script runs under)");
  if (o.probe_timeout_given && o.probe.model.empty() && o.probe.script.empty())
    throw colo::UserError("estimate: --probe-timeout goes with --probe or --script (nothing else runs the probe)");
  if (o.stated && (!o.probe.model.empty() || !o.probe.script.empty() || !o.trace.empty()))
    throw colo::UserError("estimate: --stated-mib is not read with --probe, --script or --trace (the trace is estimated)");
  if (o.stated && !o.summary.empty())
    throw colo::UserError("estimate: give either --stated-mib (the oracle's figure) or --summary, not both");
  if (o.stated && o.estimator != "oracle" && o.estimator != "auto")
    throw colo::UserError(fmt::format("estimate: --stated-mib is the oracle's figure; --estimator {} does not read it",
                                      o.estimator));
  if (!o.probe.model.empty() || !o.probe.script.empty() || !o.trace.empty()) return run_traced(o);
  if (o.summary.empty() && !o.stated) throw colo::UserError("estimate: --summary is required (or --stated-mib for oracle)");
  Estimate e;
  if (o.summary.empty()) {
    EstimateRequest req;
    req.gpu = o.gpu;
    req.batch = o.batch;
    req.optimizer = parse_optimizer(o.optimizer);
    req.stated_mib = *o.stated;
    e = make_estimator(o.estimator)->estimate(req);
  } else {
    if (o.batch <= 0) throw colo::UserError("estimate: --batch must be > 0");
    auto est = make_estimator(o.estimator);
    const ModelGraph g = load_summary(o.summary, o.seq_len);
    // The job's allocator settings, as its PyTorch would read them from this environment.
    const auto conf = allocator_conf_from_environment();
    EstimateRequest req;
    req.gpu = o.gpu;
    req.batch = o.batch;
    req.optimizer = parse_optimizer(o.optimizer);
    req.graph = &g;
    if (conf) req.allocator = &conf->settings;
    if (o.stated) req.stated_mib = *o.stated;
    e = est->estimate(req);
    if (o.json) {
      nlohmann::ordered_json j;
      j["estimate_mib"] = e.mib;
      j["estimator"] = e.estimator;
      j["explanation"] = e.explanation;
      j["gpu"] = o.gpu;
      j["batch"] = o.batch;
      j["optimizer"] = std::string(to_string(req.optimizer));
      j["summary"] = o.summary;
      j["layers"] = g.layers.size();
      j["params"] = g.total_params();
      j["unknown_layer_types"] = g.unknown_types();
      std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return;
    }
  }
  if (o.json) {
    nlohmann::ordered_json j;
    j["estimate_mib"] = e.mib;
    j["estimator"] = e.estimator;
    j["explanation"] = e.explanation;
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << e.mib << " MiB  (" << e.estimator << ": " << e.explanation << ")\n";
  }
}

void run_eval(const EvalOpts& o) {
  auto est = make_estimator(o.estimator);
  const auto fmt_ = parse_dataset_format(o.format);
  const auto rows = load_dataset(o.dataset, fmt_, parse_split(o.split));
  const auto profile = load_profile(o.gpu);
  std::optional<TraceLibrary> library;
  if (!o.traces.empty()) {
    if (o.estimator != "trace" && o.estimator != "faketensor")
      throw colo::UserError("--traces is for --estimator trace or faketensor");
    library.emplace(o.traces);
  } else if ((o.estimator == "trace" || o.estimator == "faketensor") && fmt_ != DatasetFormat::CarmaWorkloads) {
    throw colo::UserError("--estimator " + o.estimator +
                          " on GPUMemNet rows needs --traces DIR (record them: PYTHONPATH=python /usr/bin/python3 -m colo_probe.gpumemnet --csv FILE "
                          "--kind cnn|mlp --out-dir DIR)");
  }
  if (!o.keep_traces.empty()) {
    if (o.estimator != "trace" && o.estimator != "faketensor")
      throw colo::UserError("--keep-traces is for --estimator trace or faketensor (the rows it probes)");
    if (library) throw colo::UserError("--keep-traces writes the traces it probes; with --traces nothing is probed");
    std::error_code ec;
    std::filesystem::create_directories(o.keep_traces, ec);
    if (ec || !std::filesystem::is_directory(o.keep_traces))
      throw colo::UserError(fmt::format("--keep-traces {}: not a directory that can be made ({})", colo::one_line(o.keep_traces),
                                        ec ? ec.message() : "a file of that name exists"));
    if (std::filesystem::exists(o.keep_traces + "/index.jsonl"))
      throw colo::UserError(fmt::format("--keep-traces {}: it holds an index.jsonl already; name an empty directory",
                                        colo::one_line(o.keep_traces)));
  }
  colo::cli::Progress progress("colo estimate eval", rows.size(), o.json);
  const auto results = evaluate(rows, *est, o.gpu, parse_optimizer(o.optimizer), library ? &*library : nullptr,
                                [&](std::size_t done, std::size_t) { progress.update(done); }, o.keep_traces);
  progress.finish();
  const auto s = summarize(results, profile.gpu_total_mib);
  if (std::none_of(results.begin(), results.end(), [](const auto& r) { return r.estimate > 0; })) {
    // A summary of nothing would read as a perfect score.
    std::string why;
    for (const auto& r : results)
      if (!r.skipped_because.empty()) {
        why = fmt::format(" (e.g. {}: {})", colo::one_line(r.id), r.skipped_because);
        break;
      }
    throw colo::UserError(fmt::format("estimate eval: no row of {} ({} in the {} split) could be estimated{}", o.dataset,
                                      rows.size(), o.split, why));
  }
  if (o.json) {
    auto j = s.to_json();
    j["estimator"] = o.estimator;
    j["dataset"] = o.dataset;
    j["format"] = o.format;
    j["split"] = o.split;
    j["gpu"] = o.gpu;
    if (o.rows) {
      nlohmann::ordered_json arr = nlohmann::ordered_json::array();
      for (const auto& r : results) {
        nlohmann::ordered_json row = {{"id", r.id},
                                      {"measured_mib", r.measured ? nlohmann::ordered_json(*r.measured) : nlohmann::ordered_json()},
                                      {"oom", r.oom},
                                      {"estimate_mib", r.skipped ? nlohmann::ordered_json() : nlohmann::ordered_json(r.estimate)}};
        if (!r.skipped_because.empty()) row["skipped_because"] = r.skipped_because;
        arr.push_back(row);
      }
      j["rows"] = arr;
    }
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  if (o.rows)
    for (const auto& r : results)
      std::cout << fmt::format("{:<60} measured {:>7} est {:>7}{}{}\n", r.id.substr(0, 60),
                               r.measured ? std::to_string(*r.measured) : "-", r.skipped ? "-" : std::to_string(r.estimate),
                               r.oom ? " (OOM)" : "",
                               r.skipped_because.empty() ? "" : " (skipped: " + r.skipped_because + ")");
  std::cout << fmt::format(
      "{} on {} ({}, split {}): n={} median |err| {:.1f}%  p90 {:.1f}%  max {:.1f}%  under {:.1f}%  "
      "bucket acc 1/2/8 GiB {:.2f}/{:.2f}/{:.2f}  OOM rows {} predicted {}\n",
      o.estimator, o.dataset, o.format, o.split, s.n, 100 * s.median_abs_rel_err, 100 * s.p90_abs_rel_err,
      100 * s.max_abs_rel_err, 100 * s.under_rate, s.bucket_acc_1gib, s.bucket_acc_2gib, s.bucket_acc_8gib,
      s.oom_rows, s.oom_predicted);
}

void write_text(const std::filesystem::path& p, const std::string& text) { write_output_file(p.string(), text, "--out"); }

// calibrate --estimator trace: the trace estimator's constants, on top of the profile's contexts.
void run_trace_calibrate(const CalOpts& o, const std::string& command_line, const std::vector<DatasetRow>& rows,
                         const CalibrationProfile& base, bool cnn) {
  if (o.traces.empty()) throw colo::UserError("calibrate --estimator trace needs --traces DIR (PYTHONPATH=python /usr/bin/python3 -m colo_probe.gpumemnet)");
  const TraceLibrary library(o.traces);
  TraceFitOptions fo;
  fo.max_under_rate = o.max_under;
  fo.cnn = cnn;
  auto res = fit_trace_profile(rows, library, base, fo);
  std::string kept;
  std::stringstream ss(base.trace_fitted_on);
  for (std::string part; std::getline(ss, part, ';');) {
    while (!part.empty() && part.front() == ' ') part.erase(part.begin());
    if (!part.empty() && part.find(o.format) == std::string::npos) kept += part + "; ";
  }
  res.profile.trace_fitted_on = kept + fmt::format("{} ({}, split {}, {} rows with traces): {}",
                                                   std::filesystem::path(o.dataset).filename().string(), o.format, o.split,
                                                   res.report["rows"].get<std::size_t>(), command_line);
  const std::filesystem::path outp = calibrate_out(o);
  const std::string out = outp.string();
  write_text(outp, res.profile.to_json());
  res.report["profile"] = nlohmann::ordered_json::parse(res.profile.to_json());
  write_text((outp.parent_path() / outp.stem()).string() + ".fit-trace-" + o.format + ".json", res.report.dump(2) + "\n");
  const auto& c = res.report["chosen"];
  std::cout << fmt::format("wrote {} (trace: conv workspace {:.2f} x activation ({:.2f} x strided), context offset {:+.0f} MiB, "
                           "margin {:.3f}; fit median |err| {:.1f}%, under {:.1f}% on {} rows)\n",
                           out, c["conv_workspace_ratio"].get<double>(), c["strided_conv_workspace_ratio"].get<double>(),
                           c["context_offset_mib"].get<double>(), c["margin"].get<double>(),
                           100 * c["median_abs_rel_err"].get<double>(), 100 * c["under_rate"].get<double>(),
                           res.report["rows"].get<std::size_t>());
}

void run_calibrate(const CalOpts& o, const std::string& command_line) {
  const auto fmt_ = parse_dataset_format(o.format);
  if (fmt_ == DatasetFormat::CarmaWorkloads)
    throw colo::UserError("calibrate: the carma workloads are the held-out test; fit on a GPUMemNet set");
  check_profile_name(o.gpu);
  if (o.out_given) calibrate_out(o);  // a bad --out fails before the fit, not after
  const auto rows = load_dataset(o.dataset, fmt_, parse_split(o.split));
  CalibrationProfile base;
  if (!profile_path(o.gpu).empty()) base = load_profile(o.gpu);
  // The CNN step and the trace constants build on the MLP step's context (docs/ESTIMATION.md).
  else if (fmt_ == DatasetFormat::GpuMemNetCNN || o.estimator == "trace")
    throw colo::UserError(fmt::format("no calibration profile '{}' yet: fit the MLP set first (--format gpumemnet-mlp), "
                                      "then this step builds on its context",
                                      o.gpu));
  base.gpu = o.gpu;
  if (o.estimator == "trace") {
    run_trace_calibrate(o, command_line, rows, base, fmt_ == DatasetFormat::GpuMemNetCNN);
    return;
  }
  if (o.estimator != "allocsim") throw colo::UserError("calibrate --estimator: allocsim or trace");
  if (!o.traces.empty()) throw colo::UserError("--traces is for calibrate --estimator trace");
  FitOptions fo;
  fo.max_under_rate = o.max_under;
  fo.default_optimizer = parse_optimizer(o.optimizer);
  fo.cnn = fmt_ == DatasetFormat::GpuMemNetCNN;
  auto res = fit_profile(rows, base, fo);
  // One profile is fitted in two steps (MLP set, then CNN set): keep the other step's record.
  auto keep_other = [&](const std::string& prev, const std::string& now) {
    std::string kept;
    std::stringstream ss(prev);
    std::string part;
    while (std::getline(ss, part, ';')) {
      while (!part.empty() && part.front() == ' ') part.erase(part.begin());
      if (!part.empty() && part.find(o.format) == std::string::npos && part != "not fitted yet") kept += part + "; ";
    }
    return kept + now;
  };
  res.profile.fitted_on = keep_other(base.fitted_on, fmt::format("{} ({}, split {}, {} rows)",
                                                                 std::filesystem::path(o.dataset).filename().string(),
                                                                 o.format, o.split, res.report["rows"].get<std::size_t>()));
  res.profile.fit_command = keep_other(base.fit_command, command_line);
  const std::filesystem::path outp = calibrate_out(o);
  const std::string out = outp.string();
  const auto stem = outp.parent_path() / outp.stem();
  write_text(outp, res.profile.to_json());
  res.report["profile"] = nlohmann::ordered_json::parse(res.profile.to_json());
  write_text(stem.string() + ".fit-" + o.format + ".json", res.report.dump(2) + "\n");
  write_text(stem.string() + ".fit-" + o.format + "-inputs.csv", res.inputs_csv);
  std::cout << fmt::format("wrote {} (context {:.0f} + cuDNN {:.0f} MiB, conv workspace {:.2f} x activation ({:.2f} x for strided convs), margin {:.3f}; "
                           "fit median |err| {:.1f}%, under {:.1f}%)\n",
                           out, res.profile.context_mib, res.profile.cudnn_context_mib, res.profile.conv_workspace_ratio, res.profile.strided_conv_workspace_ratio,
                           fo.cnn ? res.profile.cudnn_safety_margin : res.profile.safety_margin,
                           100 * res.report["chosen"]["median_abs_rel_err"].get<double>(),
                           100 * res.report["chosen"]["under_rate"].get<double>());
}

colo::cli::RegisterCommand reg_estimate([](CLI::App& app) {
  auto* cmd = app.add_subcommand("estimate", "estimate a training job's peak GPU memory (MiB, nvidia-smi view)");
  auto o = std::make_shared<EstimateOpts>();
  cmd->add_option("--summary", o->summary, "model summary: torchsummary table, module repr or Keras summary")
      ->check(colo::cli::non_empty());
  colo::cli::add_int_flag(cmd, "--batch", o->batch, 1, colo::limits::kMaxBatch, "per-GPU batch size", false);
  auto* optimizer_flag = cmd->add_option("--optimizer", o->optimizer, "sgd, sgd-momentum, adam, adamw, adadelta, adagrad, rmsprop, ...")
      ->capture_default_str()->check(colo::cli::non_empty());
  cmd->add_option("--estimator", o->estimator, "oracle, horus, allocsim, gpumemnet, trace, faketensor or auto")
      ->capture_default_str()
      ->check(colo::cli::non_empty());
  cmd->add_option("--gpu", o->gpu, "calibration profile (calibration/<gpu>.json)")
      ->capture_default_str()
      ->check(colo::cli::non_empty());
  colo::cli::add_probe_flags(cmd, o->probe);
  cmd->add_option("--trace", o->trace, "estimate from a probe trace file (PYTHONPATH=python /usr/bin/python3 -m colo_probe --out FILE)")
      ->check(colo::cli::non_empty());
  cmd->add_option("--script", o->probe.script,
                  "estimate from the user's unmodified training script, run on the CPU for two optimizer steps "
                  "(its own arguments after --)")->check(colo::cli::non_empty());
  cmd->add_option("script_args", o->probe.script_args, "--script: the script's own arguments (after --)");
  colo::cli::add_int_flag(cmd, "--nproc-per-node", o->probe.torchrun, 1, 256,
                          "--script: the script runs under torchrun with N processes (torch.distributed, "
                          "DistributedDataParallel); the estimate is rank 0's GPU. The script sees N GPUs unless --data-parallel says more",
                          false);
  cmd->add_option("--python", o->probe.python,
                  "--script: the Python interpreter the script runs under (its PyTorch and packages; default "
                  "$COLO_PYTHON, else /usr/bin/python3)")->check(colo::cli::non_empty());
  cmd->positionals_at_end();
  cmd->add_option_function<std::string>("--probe-timeout", [o](const std::string& s) {
    o->probe_timeout = colo::parse_real(s, "--probe-timeout", 1, 86400);
    o->probe_timeout_given = true;
  }, "seconds the probe may take [1..86400] (default 300)");
  colo::cli::add_int_flag(cmd, "--seq-len", o->seq_len, 1, colo::limits::kMaxSeqLen,
                          "tokens per sample for transformer summaries (default 512)", false);
  colo::cli::add_int_flag(cmd, "--stated-mib", o->stated, 1, colo::limits::kMaxGpuMiB,
                          "a stated figure in MiB (for the oracle estimator)");
  cmd->add_flag("--json", o->json, "print one JSON object");

  auto* ev = cmd->add_subcommand("eval", "accuracy of an estimator on a data set with measured peaks");
  auto e = std::make_shared<EvalOpts>();
  ev->add_option("--dataset", e->dataset, "CSV file")->required()->check(colo::cli::non_empty());
  ev->add_option("--format", e->format, "gpumemnet-mlp, gpumemnet-cnn or carma-workloads")->required()
      ->check(colo::cli::non_empty());
  ev->add_option("--estimator", e->estimator, "estimator name")->capture_default_str()->check(colo::cli::non_empty());
  ev->add_option("--split", e->split, "all, train or test (GPUMemNet rows: 80/20 by filename hash)")
      ->capture_default_str()
      ->check(colo::cli::non_empty());
  ev->add_option("--gpu", e->gpu, "calibration profile")->capture_default_str()->check(colo::cli::non_empty());
  ev->add_option("--optimizer", e->optimizer, "optimizer for rows that do not state one")
      ->capture_default_str()
      ->check(colo::cli::non_empty());
  ev->add_flag("--json", e->json, "print one JSON object");
  ev->add_flag("--rows", e->rows, "also list every row's estimate");
  ev->add_option("--traces", e->traces, "trace/faketensor: pre-recorded probe traces (DIR/index.jsonl) instead of probing")
      ->check(colo::cli::non_empty());
  ev->add_option("--keep-traces", e->keep_traces,
                 "trace/faketensor on carma rows: also write each probe's trace to DIR (N.trace and index.jsonl, what --traces reads)")
                     ->check(colo::cli::non_empty());
  ev->callback([e] { run_eval(*e); });

  auto* cal = cmd->add_subcommand("calibrate", "fit a calibration profile on a GPUMemNet training split");
  auto c = std::make_shared<CalOpts>();
  cal->add_option("--dataset", c->dataset, "GPUMemNet CSV")->required()->check(colo::cli::non_empty());
  cal->add_option("--format", c->format, "gpumemnet-cnn or gpumemnet-mlp")
      ->capture_default_str()
      ->check(colo::cli::non_empty());
  cal->add_option("--split", c->split, "train (default), test or all")
      ->capture_default_str()
      ->check(colo::cli::non_empty());
  cal->add_option("--gpu", c->gpu, "profile name")->capture_default_str()->check(colo::cli::non_empty());
  cal->add_option("--out", c->out, "profile path (default calibration/<gpu>.json); also writes .fit.json, .fit-inputs.csv");  // empty: "--out: empty path" (its own check)
  cal->add_option("--optimizer", c->optimizer, "optimizer the data set's runs used")
      ->capture_default_str()
      ->check(colo::cli::non_empty());
  cal->add_option("--estimator", c->estimator, "allocsim (default) or trace (with --traces DIR)")
      ->capture_default_str()
      ->check(colo::cli::non_empty());
  cal->add_option("--traces", c->traces, "pre-recorded probe traces of the data set (PYTHONPATH=python /usr/bin/python3 -m colo_probe.gpumemnet)")
      ->check(colo::cli::non_empty());
  colo::cli::add_real_flag(cal, "--max-under-rate", c->max_under, 0, 1, "largest share of under-estimated fit rows");
  cal->callback([c, cal] {
    c->out_given = cal->get_option("--out")->count() > 0;
    std::string line = "colo estimate calibrate --dataset " + c->dataset + " --format " + c->format + " --split " +
                       c->split + " --gpu " + c->gpu + " --optimizer " + c->optimizer +
                       fmt::format(" --max-under-rate {}", c->max_under);
    if (c->estimator != "allocsim") line += " --estimator " + c->estimator;
    if (!c->traces.empty()) line += " --traces " + c->traces;
    if (!c->out.empty()) line += " --out " + c->out;
    (void)cal;
    run_calibrate(*c, line);
  });

  colo::cli::add_smact_subcommand(cmd);

  cmd->callback([o, cmd, optimizer_flag] {
    o->optimizer_given = optimizer_flag->count() > 0;
    o->gpus_given = cmd->count("--data-parallel") > 0;
    if (cmd->get_subcommands().empty()) run_single(*o);
  });
});

}  // namespace
