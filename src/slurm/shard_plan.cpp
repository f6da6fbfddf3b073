#include "slurm/shard_plan.h"

#include <climits>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "core/error.h"
#include "core/parse_number.h"
#include "core/split_list.h"

namespace colo::slurm {

MiB choose_shard_mib(const std::vector<MiB>& gpu_mib, MiB requested_mib) {
  if (gpu_mib.empty()) throw UserError("no GPUs: a node without GPUs gets no shards");
  if (requested_mib < 1) throw UserError(fmt::format("shard size {} MiB: must be at least 1 MiB", requested_mib));
  MiB unit = requested_mib;
  for (;;) {
    long long total = 0;
    for (MiB g : gpu_mib) total += shards_in_gpu(g, unit);
    if (total <= kMaxShardsPerNode) return unit;
    unit *= 2;
  }
}

int shards_in_gpu(MiB gpu_mib, MiB shard_mib) {
  if (shard_mib < 1 || gpu_mib < 0) return 0;
  const MiB n = gpu_mib / shard_mib;
  return n > INT_MAX ? INT_MAX : static_cast<int>(n);
}

int shards_for(MiB need_mib, double margin, MiB shard_mib) {
  // Less one part in 10^9: 51200 MiB × 1.1 is 56320.000000000007 in binary, 55 shards, not 56.
  const double want = std::ceil(static_cast<double>(need_mib) * (1.0 + margin) / static_cast<double>(shard_mib) - 1e-9);
  if (!(want < static_cast<double>(INT_MAX))) return INT_MAX;
  return std::max(1, static_cast<int>(want));
}

std::optional<TresRequest> parse_tres_per_node(const std::string& tres) {
  std::optional<TresRequest> out;
  for (std::string item : split_list(tres)) {
    // "gres:NAME[:TYPE][:COUNT]" or "gres/NAME[:TYPE][:COUNT]"
    if (item.rfind("gres:", 0) == 0 || item.rfind("gres/", 0) == 0) item = item.substr(5);
    else continue;
    const size_t colon = item.find(':');
    const std::string name = item.substr(0, colon);
    if (name != "shard" && name != "gpu") continue;
    int count = 1;
    bool counted = false;
    if (colon != std::string::npos) {
      const size_t last = item.rfind(':');
      const std::string tail = item.substr(last + 1);
      if (!tail.empty() && tail.find_first_not_of("0123456789") == std::string::npos) {
        count = static_cast<int>(parse_integer(tail, "tres_per_node '" + tres + "'", 0, INT_MAX));
        counted = true;
      }
    }
    if (!out) out = TresRequest{};
    if (name == "shard") {
      out->shards = count;
      out->size_given = counted;
    } else {
      out->whole_gpus = count;
    }
  }
  return out;
}

std::string to_tres_per_node(const TresRequest& r) {
  if (r.whole_gpus > 0) return fmt::format("gres:gpu:{}", r.whole_gpus);
  return fmt::format("gres:shard:{}", r.shards);
}

std::string with_gpu_request(const std::string& original, const TresRequest& r) {
  std::string out = to_tres_per_node(r);
  for (const std::string& item : split_list(original)) {
    if (item.empty()) continue;
    if (item.rfind("gres:", 0) == 0 || item.rfind("gres/", 0) == 0) {
      const std::string rest = item.substr(5);
      const std::string name = rest.substr(0, rest.find(':'));
      if (name == "shard" || name == "gpu") continue;
    }
    out += "," + item;
  }
  return out;
}

}  // namespace colo::slurm
