#pragma once
// Pricing for the packing bound (packing_bound.h): which set of jobs, run together on one GPU,
// is worth the most per second of GPU time?
//
// A configuration is a multiset of piece types that fits the GPU's memory. Run on one GPU it
// progresses each of its n pieces at rate 1 / F, where the sharing model guarantees
//
//   F ≥ max(1, D) × (1 + per_corunner × (n − 1)),   D = Σ demand
//
// (models/sharing_model.h, SlowdownFloor). Given a price per unit of progress of each type, the
// pricing finds max over configurations of Σ count_k × price_k / F — exactly enough for the bound
// to stay a bound: a dynamic programme over (pieces, memory, demand) with memory and demand
// rounded *down* (so every real configuration is among its states and its F is never
// over-stated), whose maximum is therefore a certified upper bound; plus the best real
// configuration of each size, evaluated exactly, as columns for the next round.
#include <cstdint>
#include <span>
#include <vector>

#include "core/units.h"

namespace colo::sim {

struct PieceType {
  MiB mib = 0;          // resident memory on the GPU
  double demand = 0;    // what it takes from the GPU, 0..1 (SlowdownFloor::demand)
  int max_count = 1;    // most pieces of this type one GPU can hold (the jobs of the type)
};

struct Configuration {
  std::vector<int> count;  // per type
  double value = 0;        // Σ count × price / F, exact
};

struct Pricing {
  double upper_bound = 0;                 // ≥ the value of every configuration that fits
  std::vector<Configuration> candidates;  // the most valuable found (value > 1), real and exact
  std::int64_t nodes = 0;                 // search nodes spent
};

// The slowdown floor of n co-runners whose demands sum to `demand`.
double slowdown_floor_factor(int n, double demand, double per_corunner);

// `price`: one per type, ≥ 0. Types with no price are never in a candidate (they only slow the
// others down). Every type must fit the GPU alone (mib ≤ capacity_mib). The search is exact
// within `node_budget` nodes; past it, what the unexplored branches could still reach stands in
// for them in upper_bound (still certified, less tight).
Pricing price_configurations(std::span<const PieceType> types, std::span<const double> price, MiB capacity_mib,
                             double per_corunner, std::int64_t node_budget = 4'000'000);

}  // namespace colo::sim
