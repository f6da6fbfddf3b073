#include "cli/estimate_smact.h"

#include <cmath>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/number_option.h"
#include "cli/output_file.h"
#include "core/error.h"
#include "core/limits.h"
#include "estimate/evaluation/dataset.h"
#include "estimate/graph/parsers.h"
#include "estimate/utilisation/smact_model.h"

namespace colo::cli {

namespace {

using namespace colo::estimate;

struct PredictOpts {
  std::string summary, model;
  std::int64_t batch = 0, seq_len = 0;
  bool json = false;
};
struct FitOpts {
  std::string cnn, mlp, out;
};
struct EvalOpts {
  std::string dataset, format, split = "test", model;
  bool json = false;
};

std::vector<GpuMemNetRow> rows_of(const std::string& path, GpuMemNetFamily family, Split split) {
  GpuMemNetDataset ds = load_gpumemnet_dataset(path, family);
  std::vector<GpuMemNetRow> out;
  for (auto& r : ds.rows) {
    const bool train = in_train_split(r.filename);
    if (split == Split::All || (split == Split::Train) == train) out.push_back(std::move(r));
  }
  return out;
}

void predict(const PredictOpts& o) {
  if (o.summary.empty()) throw UserError("estimate smact: --summary FILE is required (or use `smact fit` / `smact eval`)");
  if (o.batch <= 0) throw UserError("estimate smact: --batch N is required");
  const std::string path = o.model.empty() ? default_activity_model_path() : o.model;
  const ActivityModels models = load_activity_models(path);
  const ModelGraph g = load_summary(o.summary, o.seq_len);
  const GpuMemNetInputs in = gpumemnet_inputs(g, o.batch);
  const ActivityModel& m = models.for_inputs(in);
  const ActivityPrediction p = m.predict(in);
  if (o.json) {
    nlohmann::ordered_json j;
    j["smact"] = p.in_domain ? nlohmann::ordered_json(std::round(p.smact * 1000) / 1000) : nlohmann::ordered_json();
    j["smocc"] = p.in_domain ? nlohmann::ordered_json(std::round(p.smocc * 1000) / 1000) : nlohmann::ordered_json();
    j["model"] = std::string(to_string(m.family()));
    j["model_file"] = path;
    if (!p.in_domain) j["unknown_because"] = "outside the model's training data: " + p.outside;
    std::cout << j.dump() << "\n";
    return;
  }
  if (!p.in_domain) {
    std::cout << fmt::format("unknown: outside the model's training data ({}; {} model, {})\n", p.outside,
                             to_string(m.family()), path);
    return;
  }
  std::cout << fmt::format("SMACT {:.2f}  SMOCC {:.2f}  ({} model, {})\n", p.smact, p.smocc, to_string(m.family()), path);
}

void fit(const FitOpts& o) {
  if (o.cnn.empty() || o.mlp.empty() || o.out.empty())
    throw UserError("estimate smact fit: --cnn CSV, --mlp CSV and --out FILE are required");
  ActivityModels m;
  m.cnn = ActivityModel::fit(rows_of(o.cnn, GpuMemNetFamily::CNN, Split::Train), GpuMemNetFamily::CNN);
  m.mlp = ActivityModel::fit(rows_of(o.mlp, GpuMemNetFamily::MLP, Split::Train), GpuMemNetFamily::MLP);
  m.source = "GPUMemNet measured runs on an A100 40 GB (Avg SMACT / Avg SMOCC of successful runs), train split "
             "(80/20 by filename hash); `colo estimate smact fit --cnn data/gpumemnet/cnn.csv --mlp "
             "data/gpumemnet/mlp.csv --out FILE`";
  write_output_file(o.out, m.to_json().dump(1) + "\n", "--out");
  std::cout << fmt::format("wrote {}: cnn {} rows (ridge {}), mlp {} rows (ridge {})\n", o.out, m.cnn.fitted_rows(),
                           m.cnn.lambda(), m.mlp.fitted_rows(), m.mlp.lambda());
}

void eval(const EvalOpts& o) {
  const GpuMemNetFamily family = parse_gpumemnet_family(o.format);
  const std::string path = o.model.empty() ? default_activity_model_path() : o.model;
  const ActivityModels models = load_activity_models(path);
  const auto rows = rows_of(o.dataset, family, parse_split(o.split));
  const ActivityScore s = score_activity(family == GpuMemNetFamily::CNN ? models.cnn : models.mlp, rows);
  if (s.rows == 0) throw UserError(fmt::format("{}: no rows with a measured SMACT in the {} split", o.dataset, o.split));
  if (o.json) {
    nlohmann::ordered_json j;
    j["dataset"] = o.dataset;
    j["split"] = o.split;
    j["rows"] = s.rows;
    j["smact_median_abs_err"] = s.smact_median_abs_err;
    j["smact_p90_abs_err"] = s.smact_p90_abs_err;
    j["smocc_median_abs_err"] = s.smocc_median_abs_err;
    j["outside_domain"] = s.outside_domain;
    std::cout << j.dump() << "\n";
    return;
  }
  std::cout << fmt::format("{} ({} split, {} measured rows, {} outside the training domain): SMACT median |err| {:.3f} "
                           "(p90 {:.3f}), SMOCC median |err| {:.3f}\n",
                           o.dataset, o.split, s.rows, s.outside_domain, s.smact_median_abs_err, s.smact_p90_abs_err,
                           s.smocc_median_abs_err);
}

}  // namespace

void add_smact_subcommand(CLI::App* estimate) {
  auto* cmd = estimate->add_subcommand("smact", "a job's solo SM activity and occupancy, predicted from its model summary");
  auto p = std::make_shared<PredictOpts>();
  cmd->add_option("--summary", p->summary, "model summary (torchsummary table, module repr or Keras summary)")
      ->check(non_empty());
  add_int_flag(cmd, "--batch", p->batch, 1, limits::kMaxBatch, "per-GPU batch size", false);
  add_int_flag(cmd, "--seq-len", p->seq_len, 1, limits::kMaxSeqLen, "tokens per sample for transformer summaries", false);
  cmd->add_option("--model", p->model, "activity model file (default models/smact/a100-gpumemnet.json)")
      ->check(non_empty());
  cmd->add_flag("--json", p->json, "print one JSON object");

  auto* f = cmd->add_subcommand("fit", "fit the model on the GPUMemNet train split");
  auto fo = std::make_shared<FitOpts>();
  f->add_option("--cnn", fo->cnn, "GPUMemNet cnn.csv")->required()->check(non_empty());
  f->add_option("--mlp", fo->mlp, "GPUMemNet mlp.csv")->required()->check(non_empty());
  f->add_option("--out", fo->out, "model file to write")->required()->check(non_empty());
  // Options before `fit`/`eval` belong to the prediction (`smact --model F eval` would score the
  // shipped model, `smact --json eval` print text): refused, not ignored.
  auto parent_options_refused = [cmd](const char* sub) {
    for (const char* o : {"--summary", "--batch", "--seq-len", "--model", "--json"})
      if (cmd->count(o) > 0)
        throw UserError(fmt::format("estimate smact {}: {} before `{}` is the prediction's option; give {}'s own options after `{}`",
                                    sub, o, sub, sub, sub));
  };
  f->callback([fo, parent_options_refused] {
    parent_options_refused("fit");
    fit(*fo);
  });

  auto* e = cmd->add_subcommand("eval", "score the model on GPUMemNet rows (default: the held-out test split)");
  auto eo = std::make_shared<EvalOpts>();
  e->add_option("--dataset", eo->dataset, "GPUMemNet CSV")->required()->check(non_empty());
  e->add_option("--format", eo->format, "gpumemnet-cnn or gpumemnet-mlp")->required()->check(non_empty());
  e->add_option("--split", eo->split, "test (default), train or all")->capture_default_str()->check(non_empty());
  e->add_option("--model", eo->model, "activity model file (default models/smact/a100-gpumemnet.json)")
      ->check(non_empty());
  e->add_flag("--json", eo->json, "print one JSON object");
  e->callback([eo, parent_options_refused] {
    parent_options_refused("eval");
    eval(*eo);
  });

  cmd->callback([p, cmd] {
    if (cmd->get_subcommands().empty()) predict(*p);
  });
}

}  // namespace colo::cli
