#include "estimate/trace/conv/conv_workspace_neighbours.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

namespace colo::estimate {

ConvWorkspaceNeighbours::ConvWorkspaceNeighbours(std::shared_ptr<const ConvWorkspaceTable> table)
    : table_(std::move(table)) {
  table_->for_each([&](const std::string& key, const std::vector<ConvWorkspaceStep>& steps) {
    const auto s = parse_conv_shape(key);
    if (!s) return;
    by_class_[s->workspace_class()].push_back({s->features(), &key, &steps, std::max<std::uint64_t>(s->base_bytes(), 1)});
    ++indexed_;
  });
}

std::vector<ConvWorkspaceNeighbours::Neighbour> ConvWorkspaceNeighbours::nearest(const ConvShape& s, std::size_t k) const {
  std::vector<Neighbour> out;
  const auto it = by_class_.find(s.workspace_class());
  if (it == by_class_.end() || k == 0) return out;
  const auto f = s.features();
  std::vector<std::pair<double, const Entry*>> d;
  d.reserve(it->second.size());
  for (const Entry& e : it->second) {
    double sum = 0;
    for (std::size_t i = 0; i < f.size(); ++i) sum += (f[i] - e.features[i]) * (f[i] - e.features[i]);
    d.emplace_back(sum, &e);
  }
  const std::size_t n = std::min(k, d.size());
  std::partial_sort(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(n), d.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : *a.second->key < *b.second->key;
  });
  const double base = static_cast<double>(s.base_bytes());
  for (std::size_t i = 0; i < n; ++i)
    out.push_back({d[i].second->key, d[i].second->steps, base / static_cast<double>(d[i].second->base)});
  return out;
}

std::vector<ConvWorkspaceStep> ConvWorkspaceNeighbours::scaled_steps(const Neighbour& n, std::uint64_t max_bytes) {
  std::vector<ConvWorkspaceStep> out = *n.steps;
  for (auto& st : out)
    if (st.kind == ConvWorkspaceStep::Kind::Alloc && st.bytes > 0) {
      const double b = std::round(static_cast<double>(st.bytes) * n.scale);
      st.bytes = b >= static_cast<double>(max_bytes) ? max_bytes : std::max<std::uint64_t>(static_cast<std::uint64_t>(b), 1);
    }
  return out;
}

std::shared_ptr<const ConvWorkspaceNeighbours> load_conv_workspace_neighbours(const std::string& path) {
  auto table = load_conv_workspace_table(path);
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const ConvWorkspaceNeighbours>> cache;
  std::lock_guard lock(mu);
  if (auto it = cache.find(path); it != cache.end() && &it->second->table() == table.get()) return it->second;
  auto n = std::make_shared<const ConvWorkspaceNeighbours>(table);
  cache[path] = n;
  return n;
}

}  // namespace colo::estimate
