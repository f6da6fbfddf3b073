#include "slurm/peak_history.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/limits.h"
#include "core/one_line.h"
#include "slurm/atomic_file.h"

namespace colo::slurm {

namespace {
std::string user_of(const std::string& fingerprint) {
  return fingerprint.substr(0, fingerprint.find('-') + 1);  // "u1000-"
}
}  // namespace

void PeakHistory::record(const std::string& fingerprint, const PeakRecord& r) {
  entries_[fingerprint] = r;
  order_[fingerprint] = next_order_++;
  trim(user_of(fingerprint), fingerprint);
}

void PeakHistory::trim(const std::string& user, const std::string& keep) {
  while (true) {
    std::size_t count = 0;
    auto oldest = entries_.end();
    for (auto it = entries_.lower_bound(user); it != entries_.end() && it->first.rfind(user, 0) == 0; ++it) {
      ++count;
      if (it->first == keep) continue;
      if (oldest == entries_.end() || order_[it->first] < order_[oldest->first]) oldest = it;
    }
    if (count <= kMaxPerUser || oldest == entries_.end()) return;
    order_.erase(oldest->first);
    entries_.erase(oldest);
  }
}

std::string history_path(const std::string& state_dir) { return state_dir + "/history.json"; }

PeakHistory PeakHistory::load(const std::string& path) {
  PeakHistory h;
  std::string text;
  if (!read_small_file(path, text)) return h;
  try {
    const auto j = nlohmann::json::parse(text);
    for (const auto& [fp, v] : j.at("peaks").items()) {
      PeakRecord r{v.at("peak_mib").get<MiB>(), v.value("job_id", std::uint64_t{0})};
      if (r.peak_mib < 0 || r.peak_mib > limits::kMaxGpuMiB)
        throw UserError(fmt::format("{}: peak of '{}' out of range", path, one_line(fp)));
      h.entries_[fp] = r;
      const std::uint64_t order = v.value("order", std::uint64_t{0});  // absent in older files: oldest
      h.order_[fp] = order;
      h.next_order_ = std::max(h.next_order_, order + 1);
    }
    std::set<std::string> users;
    for (const auto& [fp, r] : h.entries_) users.insert(user_of(fp));
    for (const std::string& u : users) h.trim(u, "");
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("{}: not a colo history file: {}", path, one_line(e.what())));
  }
  return h;
}

std::optional<PeakRecord> PeakHistory::find(const std::string& fingerprint) const {
  auto it = entries_.find(fingerprint);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void PeakHistory::save(const std::string& path) const {
  nlohmann::ordered_json j;
  j["peaks"] = nlohmann::ordered_json::object();
  for (const auto& [fp, r] : entries_) {
    auto o = order_.find(fp);
    j["peaks"][fp] = {{"peak_mib", r.peak_mib}, {"job_id", r.job_id}, {"order", o == order_.end() ? 0 : o->second}};
  }
  write_file_atomically(path, j.dump(1) + "\n", 0644);
}

}  // namespace colo::slurm
