#pragma once
// Shards are memory: one gres/shard stands for a fixed amount of GPU memory, so a request of N
// shards is a reservation of N × unit MiB on one GPU. Slurm allows at most 1024 gres of one
// kind per node, so a node whose GPUs would need more gets a larger unit (doubling).
#include <optional>
#include <string>
#include <vector>

#include "core/units.h"

namespace colo::slurm {

constexpr int kMaxShardsPerNode = 1024;  // Slurm 22.05's limit on one gres count per node

// The smallest unit (the requested one doubled as often as needed) at which the node's GPUs
// together have at most kMaxShardsPerNode shards. Throws colo::UserError on no GPUs or a unit < 1.
MiB choose_shard_mib(const std::vector<MiB>& gpu_mib, MiB requested_mib);
// Whole shards that fit in a GPU of `gpu_mib` (never more memory than the GPU has).
int shards_in_gpu(MiB gpu_mib, MiB shard_mib);
// Shards for a need of `need_mib` plus `margin` (a fraction), rounded up; at least one.
// Saturates at INT_MAX rather than overflowing.
int shards_for(MiB need_mib, double margin, MiB shard_mib);

// What a job asks Slurm for on one node: some shards of one GPU, or whole GPUs.
struct TresRequest {
  int shards = 0;      // > 0: gres/shard
  int whole_gpus = 0;  // > 0: gres/gpu
  bool size_given = true;  // false for "gres:shard" without a count
};
// Parses a job's tres_per_node ("gres:shard:12", "gres:shard", "gres:gpu:1",
// "gres/gpu:a100:2", "gres:shard:2,gres:foo:1"); nullopt when it asks for neither.
std::optional<TresRequest> parse_tres_per_node(const std::string& tres);
std::string to_tres_per_node(const TresRequest& r);
// `original` (a job's tres_per_node) with its shard/gpu items replaced by `r`: the job's other
// generic resources (e.g. "gres:nvme:1") are kept.
std::string with_gpu_request(const std::string& original, const TresRequest& r);

}  // namespace colo::slurm
