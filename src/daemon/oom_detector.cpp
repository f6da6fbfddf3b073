#include "daemon/oom_detector.h"

#include <array>
#include <fstream>

namespace colo::daemon {

namespace {

struct Pattern {
  std::string_view needle;
  std::string_view framework;
};

// Messages of the common frameworks when the device allocator gives up.
constexpr std::array<Pattern, 9> kPatterns{{
    {"CUDA out of memory", "pytorch"},
    {"OutOfMemoryError", "pytorch"},
    {"CUBLAS_STATUS_ALLOC_FAILED", "cublas"},
    {"CUDNN_STATUS_ALLOC_FAILED", "cudnn"},
    {"cuDNN error: CUDNN_STATUS_NOT_ENOUGH_WORKSPACE", "cudnn"},
    {"RESOURCE_EXHAUSTED", "tensorflow/jax"},
    {"ResourceExhaustedError", "tensorflow"},
    {"OOM when allocating tensor", "tensorflow"},
    {"CUDA_ERROR_OUT_OF_MEMORY", "cuda"},
}};

}  // namespace

std::optional<OomEvidence> find_oom(std::string_view text) {
  size_t best = std::string_view::npos;
  const Pattern* hit = nullptr;
  for (const Pattern& p : kPatterns) {
    const size_t at = text.find(p.needle);
    if (at < best) {
      best = at;
      hit = &p;
    }
  }
  if (!hit) return std::nullopt;
  const size_t begin = text.rfind('\n', best);
  const size_t start = begin == std::string_view::npos ? 0 : begin + 1;
  const size_t end = text.find('\n', best);
  std::string line(text.substr(start, (end == std::string_view::npos ? text.size() : end) - start));
  if (line.size() > 200) line.resize(200);
  return OomEvidence{std::string(hit->framework), line};
}

std::optional<OomEvidence> find_oom_in_file(const std::string& path, std::int64_t offset, std::int64_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  in.seekg(0, std::ios::end);
  const std::int64_t size = in.tellg();
  if (size <= offset) return std::nullopt;
  const std::int64_t from = std::max(offset, size - max_bytes);
  in.seekg(from);
  std::string buf(static_cast<size_t>(size - from), '\0');
  in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
  buf.resize(static_cast<size_t>(in.gcount()));
  return find_oom(buf);
}

}  // namespace colo::daemon
