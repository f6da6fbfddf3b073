#include "core/policy/scorers.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "core/policy/node_weight.h"

namespace colo {

namespace {

double free_share(const Candidate& c) {
  return c.gpu->total_mib > 0 ? std::clamp(static_cast<double>(c.available_mib) / static_cast<double>(c.gpu->total_mib), 0.0, 1.0)
                              : 0.0;
}

class First final : public Scorer {
 public:
  std::string_view name() const override { return "first"; }
  double score(const Candidate& c, const PlacementRequest&, const ScoreContext&) const override {
    return -static_cast<double>(c.position);
  }
  double normalized(const Candidate& c, const PlacementRequest&, const ScoreContext& ctx) const override {
    return 1.0 - static_cast<double>(c.position) / std::max(ctx.gpu_count - 1, 1);
  }
};

class RoundRobin final : public Scorer {
 public:
  std::string_view name() const override { return "round_robin"; }
  double score(const Candidate& c, const PlacementRequest&, const ScoreContext& ctx) const override {
    const int n = ctx.gpu_count > 0 ? ctx.gpu_count : 1;
    const int distance = ((c.position - ctx.rr_next) % n + n) % n;
    return -static_cast<double>(distance);
  }
  double normalized(const Candidate& c, const PlacementRequest& r, const ScoreContext& ctx) const override {
    return 1.0 + score(c, r, ctx) / std::max(ctx.gpu_count, 1);
  }
};

class MostFreeMem final : public Scorer {
 public:
  std::string_view name() const override { return "most_free_mem"; }
  double score(const Candidate& c, const PlacementRequest&, const ScoreContext&) const override {
    return static_cast<double>(c.available_mib);
  }
  double normalized(const Candidate& c, const PlacementRequest&, const ScoreContext&) const override {
    return free_share(c);
  }
};

class LeastFreeMem final : public Scorer {
 public:
  std::string_view name() const override { return "least_free_mem"; }
  double score(const Candidate& c, const PlacementRequest&, const ScoreContext&) const override {
    return -static_cast<double>(c.available_mib);
  }
  double normalized(const Candidate& c, const PlacementRequest&, const ScoreContext&) const override {
    return 1.0 - free_share(c);
  }
};

class LeastSmact final : public Scorer {
 public:
  std::string_view name() const override { return "least_smact"; }
  double score(const Candidate& c, const PlacementRequest&, const ScoreContext&) const override {
    const double smact = c.gpu->smact.value_or(1.0);
    // SMACT dominates; free memory (in units far below one SMACT percent) breaks ties.
    return -smact * 1e9 + static_cast<double>(c.available_mib);
  }
  double normalized(const Candidate& c, const PlacementRequest&, const ScoreContext&) const override {
    return 1.0 - std::clamp(c.gpu->smact.value_or(1.0), 0.0, 1.0);
  }
};

class LowestNodeWeight final : public Scorer {
 public:
  std::string_view name() const override { return "lowest_node_weight"; }
  double score(const Candidate& c, const PlacementRequest&, const ScoreContext&) const override {
    return -static_cast<double>(c.node_weight);  // ties (one server's GPUs): lower position, as Slurm's first fit
  }
  double normalized(const Candidate& c, const PlacementRequest&, const ScoreContext&) const override {
    // Linear over node_weight's whole range (idle 1 … no GPU 2001), so a blend weighs a node's
    // rank evenly: 1/weight gave the first few hundred weight points almost all of the score.
    const double span = kNoGpuNodeWeight - kIdleNodeWeight;
    return std::clamp(static_cast<double>(kNoGpuNodeWeight - c.node_weight) / span, 0.0, 1.0);
  }
};

class Weighted final : public Scorer {
 public:
  explicit Weighted(std::vector<std::pair<ScorerPtr, double>> parts) : parts_(std::move(parts)) {
    double sum = 0;
    for (const auto& [s, w] : parts_) {
      if (!s || !(w > 0) || !std::isfinite(w)) throw std::invalid_argument("weighted scorer: weights must be positive and finite");
      sum += w;
    }
    if (parts_.empty()) throw std::invalid_argument("weighted scorer: no parts");
    for (auto& [s, w] : parts_) w /= sum;
    name_ = "weighted(";
    for (size_t i = 0; i < parts_.size(); ++i)
      name_ += fmt::format("{}{}:{:g}", i ? "," : "", parts_[i].first->name(), parts_[i].second);
    name_ += ")";
  }
  std::string_view name() const override { return name_; }
  double score(const Candidate& c, const PlacementRequest& r, const ScoreContext& ctx) const override {
    return normalized(c, r, ctx);
  }
  double normalized(const Candidate& c, const PlacementRequest& r, const ScoreContext& ctx) const override {
    double v = 0;
    for (const auto& [s, w] : parts_) v += w * s->normalized(c, r, ctx);
    return v;
  }

 private:
  std::vector<std::pair<ScorerPtr, double>> parts_;
  std::string name_;
};

}  // namespace

ScorerPtr first() { return std::make_shared<First>(); }
ScorerPtr round_robin() { return std::make_shared<RoundRobin>(); }
ScorerPtr most_free_mem() { return std::make_shared<MostFreeMem>(); }
ScorerPtr least_free_mem() { return std::make_shared<LeastFreeMem>(); }
ScorerPtr least_smact() { return std::make_shared<LeastSmact>(); }
ScorerPtr lowest_node_weight() { return std::make_shared<LowestNodeWeight>(); }

ScorerPtr weighted(std::vector<std::pair<ScorerPtr, double>> parts) {
  return std::make_shared<Weighted>(std::move(parts));
}

const std::vector<std::string_view>& scorer_names() {
  static const std::vector<std::string_view> names = {"first", "round_robin", "most_free_mem", "least_free_mem",
                                                      "least_smact", "lowest_node_weight"};
  return names;
}

ScorerPtr scorer_by_name(std::string_view name) {
  if (name == "first") return first();
  if (name == "round_robin") return round_robin();
  if (name == "most_free_mem") return most_free_mem();
  if (name == "least_free_mem") return least_free_mem();
  if (name == "least_smact") return least_smact();
  if (name == "lowest_node_weight") return lowest_node_weight();
  return nullptr;
}

}  // namespace colo
