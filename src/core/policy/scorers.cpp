#include "core/policy/scorers.h"

namespace colo {

namespace {

class First final : public Scorer {
 public:
  std::string_view name() const override { return "first"; }
  double score(const Candidate& c, const PlacementRequest&, const ScoreContext&) const override {
    return -static_cast<double>(c.position);
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
};

class MostFreeMem final : public Scorer {
 public:
  std::string_view name() const override { return "most_free_mem"; }
  double score(const Candidate& c, const PlacementRequest&, const ScoreContext&) const override {
    return static_cast<double>(c.available_mib);
  }
};

class LeastFreeMem final : public Scorer {
 public:
  std::string_view name() const override { return "least_free_mem"; }
  double score(const Candidate& c, const PlacementRequest&, const ScoreContext&) const override {
    return -static_cast<double>(c.available_mib);
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
};

class LowestNodeWeight final : public Scorer {
 public:
  std::string_view name() const override { return "lowest_node_weight"; }
  double score(const Candidate& c, const PlacementRequest&, const ScoreContext&) const override {
    return -static_cast<double>(c.node_weight);  // ties (one server's GPUs): lower position, as Slurm's first fit
  }
};

}  // namespace

ScorerPtr first() { return std::make_shared<First>(); }
ScorerPtr round_robin() { return std::make_shared<RoundRobin>(); }
ScorerPtr most_free_mem() { return std::make_shared<MostFreeMem>(); }
ScorerPtr least_free_mem() { return std::make_shared<LeastFreeMem>(); }
ScorerPtr least_smact() { return std::make_shared<LeastSmact>(); }
ScorerPtr lowest_node_weight() { return std::make_shared<LowestNodeWeight>(); }

}  // namespace colo
