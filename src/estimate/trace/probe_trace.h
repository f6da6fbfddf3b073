#pragma once
// The probe trace (python/colo_probe/trace.py documents format versions 1 and 2): every storage a
// PyTorch training job would place on the GPU over two iterations, in order, with the phase and
// operator that made it, plus the points where cuDNN convolutions and cuBLAS matmuls run.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "estimate/allocator/allocator_settings.h"

namespace colo::estimate {

enum class TracePhase : std::uint8_t { Load, Forward, Backward, Optimizer };
std::string_view to_string(TracePhase p);

struct TraceRecord {
  // EmptyCache, MemoryFraction: format version 2 (torch.cuda.empty_cache() and
  // set_per_process_memory_fraction() in the probed script).
  enum class Kind : std::uint8_t { Malloc, Free, Conv, Matmul, Step, EmptyCache, MemoryFraction };
  Kind kind = Kind::Malloc;
  TracePhase phase = TracePhase::Load;
  bool strided = false;        // Conv: a stride > 1
  std::uint16_t stream = 0;    // Malloc
  std::uint32_t op = 0;        // index into ProbeTrace::ops (Malloc, Conv, Matmul)
  std::uint32_t slot = 0;      // Malloc/Free: dense index of the storage (0 .. storages-1)
  std::uint32_t key = kNoKey;  // Conv: index into ProbeTrace::conv_keys (kNoKey: the trace has none)
  static constexpr std::uint32_t kNoKey = UINT32_MAX;
  std::uint64_t bytes = 0;     // Malloc: storage bytes; Conv: input bytes; Step: step number
  std::uint64_t out_bytes = 0; // Conv: output bytes
  double fraction = 0;         // MemoryFraction: of the GPU's whole memory, in [0, 1]
};

struct ProbeTrace {
  nlohmann::json header;             // the H record
  nlohmann::json footer;             // the E record
  std::vector<std::string> ops;      // interned operator names
  std::vector<std::string> conv_keys;  // interned convolution shape keys (python/colo_probe/conv_shape.py)
  std::vector<TraceRecord> records;
  std::uint32_t storages = 0;        // Malloc records
  int steps = 0;                     // S records seen
  std::string source;                // file name or "probe"
  int version = 1;                   // the first line's format version
  // The header's "alloc_conf": PYTORCH_CUDA_ALLOC_CONF as the job's process saw it (absent: default).
  AllocatorSettings allocator;
};

// Largest storage a record may state: 1 PiB (no GPU comes close; anything above is corruption).
inline constexpr std::uint64_t kMaxTraceBytes = 1ull << 50;

// Throws colo::UserError "SOURCE:LINE: ..." for anything but a well-formed version-1 or -2 trace (X
// and L records only in version 2): an
// unknown record, a bad number, a free of a storage never allocated (or freed twice), an id
// allocated twice, an unknown phase, a missing header or footer.
ProbeTrace parse_probe_trace(std::string_view text, const std::string& source);
ProbeTrace load_probe_trace(const std::string& path);

}  // namespace colo::estimate
