#pragma once
// Scorers rank the GPUs that passed every filter; the highest score wins, ties go to the lower
// position (so every policy is deterministic).
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "core/policy/candidate.h"

namespace colo {

struct ScoreContext {
  int gpu_count = 0;  // size of the snapshot list
  int rr_next = 0;    // round-robin cursor: position that should be tried first
};

class Scorer {
 public:
  virtual ~Scorer() = default;
  virtual std::string_view name() const = 0;
  virtual double score(const Candidate& c, const PlacementRequest& r, const ScoreContext& ctx) const = 0;
  // The same preference on [0, 1] (1 = best), so that scorers can be blended by weight: a
  // policy with one scorer ranks by score(), a blend by Σ weight × normalized().
  virtual double normalized(const Candidate& c, const PlacementRequest& r, const ScoreContext& ctx) const = 0;
};
using ScorerPtr = std::shared_ptr<const Scorer>;

ScorerPtr first();           // lowest position first (first fit)
ScorerPtr round_robin();     // next position after the last one used, cyclically
ScorerPtr most_free_mem();   // worst fit / MAGM: most available memory
ScorerPtr least_free_mem();  // best fit / MUG: least available memory that still fits
ScorerPtr least_smact();     // LUG: lowest SMACT (unmeasurable counts as busy), then most free memory
ScorerPtr lowest_node_weight();  // Slurm with colo's node weights: the best-ranked server, first fit in it

// A blend: Σ weight × normalized score of each part, weights > 0 (a site's own policy, e.g.
// memory 0.7 + interference 0.3). Name "weighted(most_free_mem:0.7,least_smact:0.3)".
ScorerPtr weighted(std::vector<std::pair<ScorerPtr, double>> parts);

// The scorer of that name (first, round_robin, most_free_mem, least_free_mem, least_smact,
// lowest_node_weight), nullptr for any other.
ScorerPtr scorer_by_name(std::string_view name);
const std::vector<std::string_view>& scorer_names();

}  // namespace colo
