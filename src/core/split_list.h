#pragma once
// "a,b,,c" → {"a", "b", "", "c"}: every item between separators, empty ones kept (callers decide
// whether an empty item is an error or nothing); "" → {""}. For the comma lists Slurm and CUDA
// hand over (SLURM_JOB_GPUS, tres_per_node, --gres).
#include <string>
#include <string_view>
#include <vector>

namespace colo {

inline std::vector<std::string> split_list(std::string_view s, char sep = ',') {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    out.emplace_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

}  // namespace colo
