// `colo gpumemnet train|cv`: trains and scores GPUMemNet classifiers on the GPUMemNet datasets.
// `train` writes the model file the gpumemnet estimator loads (models/gpumemnet/*.json).
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/command_registry.h"
#include "cli/number_option.h"
#include "cli/output_file.h"
#include "cli/progress.h"
#include "core/error.h"
#include "core/limits.h"
#include "estimate/gpumemnet/gpumemnet_experiment.h"

namespace colo::cli {
namespace {

struct GpuMemNetOptions {
  std::string dataset, format, out;
  double bucket_gib = 8;
  int folds = 5;
  int epochs = estimate::AdamOptions{}.epochs;
  double learning_rate = estimate::AdamOptions{}.learning_rate;
  std::uint64_t seed = estimate::EnsembleConfig{}.seed;
  bool json = false;
  bool drop_oom = false;
};

void add_common(CLI::App* sub, GpuMemNetOptions& o) {
  sub->add_option("--dataset", o.dataset, "GPUMemNet CSV (data/gpumemnet/{mlp,cnn}.csv)")->required();
  sub->add_option("--format", o.format, "gpumemnet-mlp | gpumemnet-cnn")->required();
  // A bucket is at least 1 MiB (bucket_mib is whole MiB) and at most one (1 TiB) GPU.
  add_real_flag(sub, "--bucket-gib", o.bucket_gib, 1.0 / 1024, 1024, "bucket width in GiB (thesis: 1 for MLP, 8 for CNN)");
  add_int_flag(sub, "--folds", o.folds, 0, limits::kMaxFolds,
               "k of k-fold cross-validation on the training split (0: skip, else ≥ 2)");
  add_int_flag(sub, "--epochs", o.epochs, 1, limits::kMaxEpochs, "Adam epochs per ensemble member");
  add_real_flag(sub, "--lr", o.learning_rate, 1e-12, 10, "Adam learning rate");
  add_uint_flag(sub, "--seed", o.seed, "seed of weights, batch order and folds");
  sub->add_flag("--drop-oom", o.drop_oom, "leave OOM_CRASH rows out (default: they form a bucket above capacity)");
  sub->add_flag("--json", o.json, "print the scores as one JSON object");
}

std::string row(const std::string& label, const estimate::ClassificationScores& s) {
  return fmt::format("{:<10} {:>5} {:>9.4f} {:>10.4f} {:>8.4f} {:>8.4f}\n", label, s.n, s.accuracy, s.precision,
                     s.recall, s.f1);
}

void run(const GpuMemNetOptions& o, bool train, const std::string& command) {
  if (o.bucket_gib <= 0) throw UserError(fmt::format("--bucket-gib must be positive, got {}", o.bucket_gib));
  estimate::GpuMemNetExperiment e;
  e.dataset = o.dataset;
  e.family = estimate::parse_gpumemnet_family(o.format);
  e.bucket_mib = static_cast<MiB>(o.bucket_gib * static_cast<double>(kGiB));
  e.folds = o.folds;
  e.final_model = train;
  e.drop_oom = o.drop_oom;
  e.config.adam.epochs = o.epochs;
  e.config.adam.learning_rate = o.learning_rate;
  e.config.seed = o.seed;
  e.command = command;
  if (o.folds == 1 || o.folds < 0) throw UserError("--folds must be 0 (skip) or at least 2");
  if (!train && o.folds == 0) throw UserError("gpumemnet cv --folds 0 would cross-validate nothing: give at least 2");
  if (train && o.out.empty()) throw UserError("gpumemnet train needs --out <model.json>");
  if (train) check_output_path(o.out, "--out");  // before the training, not after it

  const auto t0 = std::chrono::steady_clock::now();
  // Members trained: each fold's ensemble, then the final model's.
  const std::size_t runs = (e.folds >= 2 ? static_cast<std::size_t>(e.folds) : 0) + (e.final_model ? 1 : 0);
  Progress progress(train ? "colo gpumemnet train" : "colo gpumemnet cv", runs * e.config.members.size(), o.json);
  std::size_t members_done = 0;
  e.config.member_done = [&] { progress.update(++members_done); };
  const auto r = estimate::run_gpumemnet_experiment(e);
  progress.finish();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (train) write_output_file(o.out, r.model.to_json().dump(1) + "\n", "--out");

  if (o.json) {
    auto j = estimate::to_json(r);
    j["seconds"] = secs;
    if (train) j["model"] = o.out;
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  std::cout << fmt::format("GPUMemNet {} set, {:g} GiB buckets: {} train rows, {} test rows; dropped {} rows without layers, {} unmeasured\n",
                           estimate::to_string(e.family), o.bucket_gib, r.train_rows, r.test_rows, r.no_layer_rows,
                           r.unmeasured_rows);
  std::cout << fmt::format("{:<10} {:>5} {:>9} {:>10} {:>8} {:>8}\n", "", "n", "accuracy", "precision", "recall", "f1");
  for (std::size_t i = 0; i < r.folds.size(); ++i) std::cout << row(fmt::format("fold {}", i + 1), r.folds[i]);
  if (!r.folds.empty()) {
    std::cout << row("cv mean", r.cv.mean) << row("cv std", r.cv.stddev);
  }
  if (train) {
    std::cout << row("test", r.test);
    std::cout << fmt::format("test upper edge vs measured: median |rel err| {:.3f}, under-estimates {:.3f} of {} rows, "
                             "OOM rows predicted {}/{}\n",
                             r.test_edges.median_abs_rel_err, r.test_edges.under_rate, r.test_edges.n,
                             r.test_edges.oom_predicted, r.test_edges.oom_rows);
    std::cout << "model written to " << o.out << "\n";
  }
  std::cout << fmt::format("{:.1f} s\n", secs);
}

const RegisterCommand reg_gpumemnet([](CLI::App& app) {
  auto* cmd = app.add_subcommand("gpumemnet", "train and cross-validate GPUMemNet memory classifiers");
  cmd->require_subcommand(1);
  auto o = std::make_shared<GpuMemNetOptions>();

  auto* train = cmd->add_subcommand("train", "cross-validate, train on the training split, score the test split, "
                                             "write the model file");
  add_common(train, *o);
  train->add_option("--out", o->out, "model file to write (models/gpumemnet/<family>-<N>gib.json)")->required();
  train->callback([o] {
    run(*o, true,
        fmt::format("colo gpumemnet train --dataset {} --format {} --bucket-gib {:g} --folds {} --epochs {} --lr {:g} "
                    "--seed {}{} --out {}",
                    o->dataset, o->format, o->bucket_gib, o->folds, o->epochs, o->learning_rate, o->seed,
                    o->drop_oom ? " --drop-oom" : "", o->out));
  });

  auto* cv = cmd->add_subcommand("cv", "k-fold cross-validation on the training split only");
  add_common(cv, *o);
  cv->callback([o] { run(*o, false, ""); });
});

}  // namespace
}  // namespace colo::cli
