#include "estimate/gpumemnet/gpumemnet_model.h"

#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "core/error.h"

namespace colo::estimate {

namespace {
constexpr const char* kFormat = "colo-gpumemnet";
constexpr int kVersion = 1;
}  // namespace

int MemoryBuckets::oom_label() const {
  return static_cast<int>((capacity_mib + width_mib - 1) / width_mib);
}

int MemoryBuckets::label(double measured_mib, bool oom) const {
  if (oom) return oom_label();
  if (!(measured_mib >= 0)) throw UserError(fmt::format("gpumemnet: bad measured memory {}", measured_mib));
  const int k = static_cast<int>(std::floor(measured_mib / static_cast<double>(width_mib)));
  return std::min(k, oom_label());
}

Eigen::MatrixXd GpuMemNetModel::predict_proba(const Eigen::MatrixXd& raw) const {
  if (members.empty()) throw UserError("gpumemnet: model has no ensemble members");
  const Eigen::MatrixXd x = standardizer.apply(raw);
  Eigen::MatrixXd p = members.front().predict_proba(x);
  for (std::size_t i = 1; i < members.size(); ++i) p += members[i].predict_proba(x);
  // A model file with extreme (if bounded) numbers can still overflow on far-out features.
  if (!p.allFinite()) throw UserError("gpumemnet: the model gives non-finite probabilities for these features");
  return p / static_cast<double>(members.size());
}

std::vector<int> GpuMemNetModel::predict(const Eigen::MatrixXd& raw) const {
  const Eigen::MatrixXd p = predict_proba(raw);
  std::vector<int> out(static_cast<std::size_t>(p.cols()));
  for (Eigen::Index i = 0; i < p.cols(); ++i) {
    Eigen::Index best = 0;
    p.col(i).maxCoeff(&best);  // ties go to the lower bucket (first maximum)
    out[static_cast<std::size_t>(i)] = static_cast<int>(best);
  }
  return out;
}

int GpuMemNetModel::predict(const GpuMemNetInputs& in) const {
  return predict(Eigen::MatrixXd(gpumemnet_features(in))).front();
}

nlohmann::json GpuMemNetModel::to_json() const {
  nlohmann::json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["kind"] = kind;
  j["bucket_mib"] = buckets.width_mib;
  j["capacity_mib"] = buckets.capacity_mib;
  j["classes"] = buckets.classes();
  std::vector<std::string> names;
  for (auto n : gpumemnet_feature_names()) names.emplace_back(n);
  j["features"] = names;
  j["activations"] = known_activations();
  j["mean"] = std::vector<double>(standardizer.mean.data(), standardizer.mean.data() + standardizer.mean.size());
  j["scale"] = std::vector<double>(standardizer.scale.data(), standardizer.scale.data() + standardizer.scale.size());
  j["members"] = nlohmann::json::array();
  for (const auto& m : members) j["members"].push_back(m.to_json());
  j["provenance"] = provenance;
  return j;
}

GpuMemNetModel GpuMemNetModel::from_json(const nlohmann::json& j, const std::string& where) {
  GpuMemNetModel m;
  try {
    if (!j.is_object() || j.value("format", "") != kFormat) {
      throw UserError(fmt::format("{}: not a GPUMemNet model file (format must be '{}')", where, kFormat));
    }
    if (j.at("version").get<int>() != kVersion) {
      throw UserError(fmt::format("{}: model file version {} (this build reads {})", where,
                                  j.at("version").get<int>(), kVersion));
    }
    m.kind = j.at("kind").get<std::string>();
    m.buckets.width_mib = j.at("bucket_mib").get<MiB>();
    m.buckets.capacity_mib = j.at("capacity_mib").get<MiB>();
    // 2^30 MiB (1 PiB) is past any GPU and keeps the bucket arithmetic inside int
    if (m.buckets.width_mib <= 0 || m.buckets.capacity_mib <= 0 || m.buckets.width_mib > (MiB{1} << 30) ||
        m.buckets.capacity_mib > (MiB{1} << 30)) {
      throw UserError(fmt::format("{}: bucket_mib and capacity_mib must be in [1, 2^30], got {} and {}", where,
                                  m.buckets.width_mib, m.buckets.capacity_mib));
    }
    if (j.at("classes").get<int>() != m.buckets.classes()) {
      throw UserError(fmt::format("{}: {} classes but buckets imply {}", where, j.at("classes").get<int>(),
                                  m.buckets.classes()));
    }
    std::vector<std::string> names;
    for (auto n : gpumemnet_feature_names()) names.emplace_back(n);
    if (j.at("features").get<std::vector<std::string>>() != names ||
        j.at("activations").get<std::vector<std::string>>() != known_activations()) {
      throw UserError(fmt::format("{}: trained on other features than this build computes; retrain it", where));
    }
    const auto mean = j.at("mean").get<std::vector<double>>();
    const auto scale = j.at("scale").get<std::vector<double>>();
    if (mean.size() != names.size() || scale.size() != names.size()) {
      throw UserError(fmt::format("{}: standardiser has {}/{} entries for {} features", where, mean.size(),
                                  scale.size(), names.size()));
    }
    m.standardizer.mean = Eigen::Map<const Eigen::VectorXd>(mean.data(), static_cast<Eigen::Index>(mean.size()));
    m.standardizer.scale = Eigen::Map<const Eigen::VectorXd>(scale.data(), static_cast<Eigen::Index>(scale.size()));
    // The features are logs and counts: a mean past 1e9 or a scale outside [1e-9, 1e9] is not a
    // trained standardiser, and would turn every prediction into inf/NaN.
    if (!m.standardizer.mean.allFinite() || (m.standardizer.mean.array().abs() > 1e9).any() ||
        !(m.standardizer.scale.array() >= 1e-9).all() || !(m.standardizer.scale.array() <= 1e9).all()) {
      throw UserError(fmt::format("{}: standardiser holds a mean outside ±1e9 or a scale outside [1e-9, 1e9]", where));
    }
    const auto& jm = j.at("members");
    if (!jm.is_array() || jm.empty()) throw UserError(fmt::format("{}: no ensemble members", where));
    for (std::size_t i = 0; i < jm.size(); ++i) {
      auto net = MlpClassifier::from_json(jm[i], fmt::format("{}: member {}", where, i));
      if (net.inputs() != static_cast<int>(names.size()) || net.classes() != m.buckets.classes()) {
        throw UserError(fmt::format("{}: member {} maps {} inputs to {} classes, expected {} to {}", where, i,
                                    net.inputs(), net.classes(), names.size(), m.buckets.classes()));
      }
      m.members.push_back(std::move(net));
    }
    m.provenance = j.value("provenance", nlohmann::json::object());
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("{}: malformed model file: {}", where, e.what()));
  }
  return m;
}

void GpuMemNetModel::save(const std::string& path) const {
  std::ofstream out(path);
  if (!out) throw UserError(fmt::format("{}: cannot write model file", path));
  out << to_json().dump(1) << "\n";
  out.close();  // the last buffer reaches the file here: a full disk shows only now
  if (!out) throw UserError(fmt::format("{}: write failed", path));
}

GpuMemNetModel GpuMemNetModel::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError(fmt::format("{}: cannot open GPUMemNet model file", path));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw UserError(fmt::format("{}: corrupt GPUMemNet model file (byte {}): not valid JSON", path, e.byte));
  } catch (const nlohmann::json::exception&) {
    // out_of_range 406: a number past a double (1e400) is no weight either.
    throw UserError(fmt::format("{}: corrupt GPUMemNet model file: a number in it is out of range", path));
  }
  return from_json(j, path);
}

}  // namespace colo::estimate
