#include "estimate/utilisation/smact_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/resource_path.h"
#include "common/unique_keys_json.h"
#include "core/error.h"
#include "core/one_line.h"

namespace colo::estimate {

namespace {

constexpr int kFolds = 5;
constexpr double kLambdas[] = {0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30, 100};

// [1, z_i, z_i·z_j (i ≤ j)] of one standardised feature vector.
Eigen::VectorXd expand(const Eigen::VectorXd& z) {
  const Eigen::Index n = z.size();
  Eigen::VectorXd out(1 + n + n * (n + 1) / 2);
  Eigen::Index k = 0;
  out(k++) = 1;
  for (Eigen::Index i = 0; i < n; ++i) out(k++) = z(i);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = i; j < n; ++j) out(k++) = z(i) * z(j);
  return out;
}

// Ridge solution with the intercept (column 0) unpenalised, from a training set's Gram matrix
// and Aᵀy: formed once per set and solved for every strength (9 strengths on 5 folds; the
// products dominate the fit).
Eigen::VectorXd ridge(const Eigen::MatrixXd& gram, const Eigen::VectorXd& aty, double lambda) {
  Eigen::MatrixXd g = gram;
  for (Eigen::Index i = 1; i < g.rows(); ++i) g(i, i) += lambda;
  return g.ldlt().solve(aty);
}

double clamp01(double v) { return std::clamp(v, 0.0, 1.0); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(std::min<double>(static_cast<double>(v.size() - 1), std::floor(q * static_cast<double>(v.size()))))];
}

// A fitted ridge model on standardised features has modest weights; anything beyond this is a
// damaged or hand-made file (a weight of 1e308 turned every prediction into SMACT 1.00).
constexpr double kMaxModelValue = 1e6;

const nlohmann::json& field(const nlohmann::json& j, const std::string& where, const char* key) {
  if (!j.is_object() || !j.contains(key)) throw UserError(fmt::format("{}: missing '{}'", where, key));
  return j.at(key);
}

double number_in(const nlohmann::json& j, const std::string& where, const char* key, double lo, double hi) {
  const nlohmann::json& v = field(j, where, key);
  if (!v.is_number() || !(v.get<double>() >= lo && v.get<double>() <= hi))
    throw UserError(fmt::format("{}: '{}' must be a number in [{:g}, {:g}]", where, key, lo, hi));
  return v.get<double>();
}

Eigen::VectorXd vector_from(const nlohmann::json& j, const std::string& where, const char* key, Eigen::Index n,
                            double bound = kMaxModelValue) {
  const nlohmann::json& a = field(j, where, key);
  if (!a.is_array()) throw UserError(fmt::format("{}: '{}' must be an array of numbers", where, key));
  std::vector<double> v;
  for (const nlohmann::json& x : a) {
    if (!x.is_number()) throw UserError(fmt::format("{}: '{}' must be an array of numbers", where, key));
    v.push_back(x.get<double>());
  }
  if (static_cast<Eigen::Index>(v.size()) != n)
    throw UserError(fmt::format("{}: '{}' has {} values, expected {}", where, key, v.size(), n));
  Eigen::VectorXd out(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    if (!std::isfinite(v[static_cast<size_t>(i)]) || std::abs(v[static_cast<size_t>(i)]) > bound)
      throw UserError(fmt::format("{}: '{}' holds {} (a fitted model's values stay within ±{:g})", where, key,
                                  v[static_cast<size_t>(i)], bound));
    out(i) = v[static_cast<size_t>(i)];
  }
  return out;
}

std::vector<double> to_vec(const Eigen::VectorXd& v) { return std::vector<double>(v.data(), v.data() + v.size()); }

}  // namespace

bool has_activity_label(const GpuMemNetRow& r) { return !r.oom && r.smact && r.smocc; }

ActivityModel ActivityModel::fit(const std::vector<GpuMemNetRow>& all, GpuMemNetFamily family) {
  std::vector<const GpuMemNetRow*> rows;
  for (const auto& r : all)
    if (has_activity_label(r)) rows.push_back(&r);
  if (rows.size() < 20)
    throw UserError(fmt::format("smact fit: {} rows with a measured SMACT and SMOCC; at least 20 are needed", rows.size()));
  const Eigen::Index n = static_cast<Eigen::Index>(rows.size());
  Eigen::MatrixXd x(kGpuMemNetFeatureCount, n);
  Eigen::VectorXd ys(n), yo(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    x.col(i) = gpumemnet_features(rows[static_cast<size_t>(i)]->inputs);
    ys(i) = *rows[static_cast<size_t>(i)]->smact;
    yo(i) = *rows[static_cast<size_t>(i)]->smocc;
  }
  ActivityModel m;
  m.family_ = family;
  m.rows_ = static_cast<int>(n);
  m.standardizer_ = Standardizer::fit(x);
  m.constant_.assign(static_cast<size_t>(kGpuMemNetFeatureCount), false);
  for (Eigen::Index f = 0; f < x.rows(); ++f)
    m.constant_[static_cast<size_t>(f)] = x.row(f).maxCoeff() - x.row(f).minCoeff() <= 1e-12 * std::max(1.0, std::abs(x(f, 0)));
  const Eigen::MatrixXd z = m.standardizer_.apply(x);
  Eigen::MatrixXd a(n, expand(z.col(0)).size());
  for (Eigen::Index i = 0; i < n; ++i) a.row(i) = expand(z.col(i)).transpose();
  // Ridge strength: the lowest mean absolute SMACT error over 5 folds (fold = row index mod 5).
  struct Fold {
    std::vector<Eigen::Index> test;
    Eigen::MatrixXd gram;
    Eigen::VectorXd aty;
  };
  std::vector<Fold> folds(kFolds);
  for (int f = 0; f < kFolds; ++f) {
    std::vector<Eigen::Index> tr;
    for (Eigen::Index i = 0; i < n; ++i) (i % kFolds == f ? folds[static_cast<size_t>(f)].test : tr).push_back(i);
    const Eigen::MatrixXd at = a(tr, Eigen::all);
    folds[static_cast<size_t>(f)].gram = at.transpose() * at;
    folds[static_cast<size_t>(f)].aty = at.transpose() * ys(tr);
  }
  double best = std::numeric_limits<double>::infinity();
  for (double lambda : kLambdas) {
    double err = 0;
    for (const Fold& fold : folds) {
      const Eigen::VectorXd w = ridge(fold.gram, fold.aty, lambda);
      for (Eigen::Index i : fold.test) err += std::abs(clamp01(a.row(i).dot(w)) - ys(i));
    }
    if (err < best) {
      best = err;
      m.lambda_ = lambda;
    }
  }
  const Eigen::MatrixXd gram = a.transpose() * a;
  m.w_smact_ = ridge(gram, a.transpose() * ys, m.lambda_);
  m.w_smocc_ = ridge(gram, a.transpose() * yo, m.lambda_);
  return m;
}

ActivityPrediction ActivityModel::predict(const GpuMemNetInputs& in) const {
  const Eigen::VectorXd z = standardizer_.apply(gpumemnet_features(in));
  const Eigen::VectorXd e = expand(z);
  ActivityPrediction p{clamp01(e.dot(w_smact_)), clamp01(e.dot(w_smocc_)), true, {}};
  const Eigen::VectorXd raw = gpumemnet_features(in);
  for (size_t f = 0; f < constant_.size(); ++f) {
    const double m = standardizer_.mean(static_cast<Eigen::Index>(f)), v = raw(static_cast<Eigen::Index>(f));
    if (constant_[f] && std::abs(v - m) > 1e-9 * std::max(1.0, std::abs(m))) {
      p.in_domain = false;
      p.outside = fmt::format("{} = {:.4g}, while every one of the {} {} training rows had {:.4g}", gpumemnet_feature_names()[f],
                              v, rows_, to_string(family_), m);
      return p;
    }
  }
  Eigen::Index worst = 0;
  const double far = z.cwiseAbs().maxCoeff(&worst);
  if (!(far <= kActivityDomainSigma)) {
    p.in_domain = false;
    p.outside = fmt::format("{} at {:.1f} σ from the {} training rows", gpumemnet_feature_names()[static_cast<size_t>(worst)],
                            far, to_string(family_));
  }
  return p;
}

nlohmann::json ActivityModel::to_json() const {
  return {{"family", std::string(to_string(family_))}, {"lambda", lambda_}, {"fitted_rows", rows_},
          {"feature_mean", to_vec(standardizer_.mean)}, {"feature_scale", to_vec(standardizer_.scale)},
          {"feature_constant", constant_}, {"w_smact", to_vec(w_smact_)}, {"w_smocc", to_vec(w_smocc_)}};
}

namespace {

// A key the reader does not know is a typo or another version's file, not something to skip.
void refuse_unknown_activity_fields(const nlohmann::json& j, const std::string& where, std::initializer_list<const char*> known) {
  if (!j.is_object()) return;  // said by the caller
  for (auto it = j.begin(); it != j.end(); ++it) {  // (Clang 14 cannot capture a structured binding)
    const std::string& key = it.key();
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; }))
      throw UserError(fmt::format("{}: unknown field '{}'", where, shown_json_key(key)));
  }
}

}  // namespace

ActivityModel ActivityModel::from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw UserError(fmt::format("{}: must be a JSON object", where));
  refuse_unknown_activity_fields(j, where, {"family", "lambda", "fitted_rows", "feature_mean", "feature_scale", "feature_constant",
                                   "w_smact", "w_smocc"});
  ActivityModel m;
  const nlohmann::json& family = field(j, where, "family");
  if (!family.is_string()) throw UserError(fmt::format("{}: 'family' must be \"mlp\" or \"cnn\"", where));
  m.family_ = parse_gpumemnet_family("gpumemnet-" + family.get<std::string>());
  m.lambda_ = number_in(j, where, "lambda", 0, kMaxModelValue);
  const double rows = number_in(j, where, "fitted_rows", 1, 1e9);
  if (rows != std::floor(rows)) throw UserError(fmt::format("{}: 'fitted_rows' must be a whole number", where));
  m.rows_ = static_cast<int>(rows);
  // Feature means are in the features' own units (parameters, activations: up to ~1e12).
  m.standardizer_.mean = vector_from(j, where, "feature_mean", kGpuMemNetFeatureCount, 1e15);
  m.standardizer_.scale = vector_from(j, where, "feature_scale", kGpuMemNetFeatureCount, 1e15);
  const Eigen::Index cols = expand(Eigen::VectorXd::Zero(kGpuMemNetFeatureCount)).size();
  m.w_smact_ = vector_from(j, where, "w_smact", cols);
  m.w_smocc_ = vector_from(j, where, "w_smocc", cols);
  // The standardiser never writes a scale below 1e-12 (a constant feature gets 1): smaller is a
  // damaged file, and would turn any difference into an absurd number of σ.
  for (Eigen::Index i = 0; i < m.standardizer_.scale.size(); ++i)
    if (!(m.standardizer_.scale(i) >= 1e-12)) throw UserError(fmt::format("{}: feature_scale must be ≥ 1e-12", where));
  m.constant_.assign(static_cast<size_t>(kGpuMemNetFeatureCount), false);
  if (j.contains("feature_constant")) {
    const nlohmann::json& c = j.at("feature_constant");
    if (!c.is_array() || c.size() != static_cast<size_t>(kGpuMemNetFeatureCount))
      throw UserError(fmt::format("{}: 'feature_constant' must be an array of {} true/false values", where, kGpuMemNetFeatureCount));
    for (size_t i = 0; i < c.size(); ++i) {
      if (!c[i].is_boolean())
        throw UserError(fmt::format("{}: 'feature_constant' must be an array of {} true/false values", where, kGpuMemNetFeatureCount));
      m.constant_[i] = c[i].get<bool>();
    }
  }
  return m;
}

nlohmann::json ActivityModels::to_json() const {
  return {{"format", "colo-activity-model 1"}, {"source", source}, {"mlp", mlp.to_json()}, {"cnn", cnn.to_json()}};
}

ActivityModels ActivityModels::from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("format") || !j.at("format").is_string() ||
      j.at("format").get<std::string>() != "colo-activity-model 1")
    throw UserError(fmt::format("{}: not a colo activity model (format 'colo-activity-model 1')", where));
  refuse_unknown_activity_fields(j, where, {"format", "source", "mlp", "cnn"});
  ActivityModels m;
  if (j.contains("source")) {
    if (!j.at("source").is_string()) throw UserError(fmt::format("{}: 'source' must be text", where));
    m.source = j.at("source").get<std::string>();
  }
  if (!j.contains("mlp") || !j.contains("cnn")) throw UserError(fmt::format("{}: needs both an 'mlp' and a 'cnn' model", where));
  m.mlp = ActivityModel::from_json(j.at("mlp"), where + ": mlp");
  m.cnn = ActivityModel::from_json(j.at("cnn"), where + ": cnn");
  if (m.mlp.family() != GpuMemNetFamily::MLP || m.cnn.family() != GpuMemNetFamily::CNN)
    throw UserError(fmt::format("{}: the 'mlp' and 'cnn' entries name the other family", where));
  return m;
}

ActivityModels load_activity_models(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw UserError(fmt::format("{}: no such activity model file", path));
  std::ifstream in(path);
  if (!in) throw UserError(fmt::format("{}: cannot read the activity model", path));
  std::stringstream ss;
  ss << in.rdbuf();
  UniqueKeysJson parsed = parse_json_unique_keys(ss.str());
  if (parsed.duplicate)  // nlohmann keeps the last of two: the first would be silently ignored
    throw UserError(fmt::format("{}: field '{}' given twice", path, shown_json_key(*parsed.duplicate)));
  if (!parsed.value.is_discarded()) return ActivityModels::from_json(parsed.value, path);
  nlohmann::json j;
  try {  // not JSON: parsed again for the parser's own words on where
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw UserError(fmt::format("{}: not JSON (syntax error at byte {})", path, e.byte));
  } catch (const nlohmann::json::exception&) {
    // out_of_range 406: a number beyond a double (1e400) is no model value either.
    throw UserError(fmt::format("{}: not a usable model: a number in it is out of range", path));
  }
  throw UserError(fmt::format("{}: not JSON (a NUL byte)", path));
}

std::string default_activity_model_path() {
  if (const char* p = std::getenv("COLO_SMACT_MODEL"); p && *p) return p;
  return resource_path(nullptr, "models", "smact/a100-gpumemnet.json");
}

ActivityScore score_activity(const ActivityModel& m, const std::vector<GpuMemNetRow>& rows) {
  std::vector<double> es, eo;
  int s_outside = 0;
  for (const auto& r : rows) {
    if (!has_activity_label(r)) continue;
    const auto p = m.predict(r.inputs);
    s_outside += !p.in_domain;
    es.push_back(std::abs(p.smact - *r.smact));
    eo.push_back(std::abs(p.smocc - *r.smocc));
  }
  ActivityScore s;
  s.rows = static_cast<int>(es.size());
  s.smact_median_abs_err = median(es);
  s.smact_p90_abs_err = quantile(es, 0.9);
  s.smocc_median_abs_err = median(eo);
  s.outside_domain = s_outside;
  return s;
}

}  // namespace colo::estimate
