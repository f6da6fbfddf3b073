#include "estimate/trace/trace_replay.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "estimate/allocator/caching_allocator.h"
#include "estimate/trace/conv/conv_shape.h"

namespace colo::estimate {

TraceReplayOptions TraceReplayOptions::from_profile(const CalibrationProfile& p) {
  TraceReplayOptions o;
  o.cublas_workspace = bytes_of_mib(p.cublas_workspace_mib);
  o.conv_workspace = bytes_of_mib(p.trace_conv_workspace_mib);
  o.conv_workspace_ratio = p.trace_conv_workspace_ratio;
  o.strided_conv_workspace_ratio = p.trace_strided_conv_workspace_ratio;
  if (!p.conv_workspace_table.empty()) {
    const auto path = (std::filesystem::path(p.source).parent_path() / p.conv_workspace_table).string();
    o.conv_table = load_conv_workspace_table(path);
    if (p.trace_conv_workspace_neighbours > 0) {
      o.conv_neighbours = load_conv_workspace_neighbours(path);
      o.conv_neighbour_count = static_cast<std::size_t>(p.trace_conv_workspace_neighbours);
    }
  }
  return o;
}

bool trace_uses_cudnn(const ProbeTrace& t) {
  for (const auto& op : t.ops)
    if (op.find("convolution") != std::string::npos || op.find("cudnn_batch_norm") != std::string::npos) return true;
  return false;
}

namespace {

// What a trace key's convolutions replay, resolved once for all runs: the table's measured steps,
// or else the scaled steps of its nearest measured shapes (nearest first; the i-th run takes the
// i-th); neither: the profile's ratios.
struct KeySteps {
  const std::vector<ConvWorkspaceStep>* measured = nullptr;
  std::vector<std::vector<ConvWorkspaceStep>> near;
};

TraceReplay replay_once(const ProbeTrace& t, const TraceReplayOptions& o, const std::vector<KeySteps>& keys,
                        std::size_t rank) {
  CachingAllocator::Config cfg;
  cfg.device_capacity = o.capacity;
  cfg.settings = t.allocator;
  CachingAllocator a(cfg);
  std::vector<CachingAllocator::Handle> handle(t.storages);
  std::vector<std::uint64_t> size(t.storages);
  TraceReplay r;
  std::uint64_t live = 0;
  int step = 1;
  bool cublas = false;
  auto at = [&](const TraceRecord& rec) {
    return fmt::format("{} {} (step {})", to_string(rec.phase), t.ops[rec.op], step);
  };
  auto note_reserved = [&](const TraceRecord& rec) {
    if (a.stats().reserved > r.reserved_peak) {
      r.reserved_peak = a.stats().reserved;
      r.reserved_peak_at = at(rec);
    }
  };
  const TraceRecord* cur = nullptr;
  std::uint64_t asking = 0;  // bytes of the allocation being made (what an out-of-memory refused)
  // A measured convolution in progress: its steps, the next one, the C record, its transients.
  const std::vector<ConvWorkspaceStep>* conv = nullptr;
  std::size_t conv_pos = 0;
  const TraceRecord* conv_rec = nullptr;
  std::vector<std::pair<CachingAllocator::Handle, std::uint64_t>> transient;
  // Runs the measured steps up to the next output (the trace's M record), or all that are left
  // (outputs the probe did not record are skipped).
  auto conv_steps = [&](bool to_end) {
    for (; conv && conv_pos < conv->size(); ++conv_pos) {
      const ConvWorkspaceStep& s = (*conv)[conv_pos];
      if (s.kind == ConvWorkspaceStep::Kind::Output) {
        if (!to_end) return;
      } else if (s.kind == ConvWorkspaceStep::Kind::Alloc) {
        asking = s.bytes;
        transient.emplace_back(s.bytes > 0 ? a.malloc(s.bytes) : CachingAllocator::Handle{}, s.bytes);
        note_reserved(*conv_rec);
      } else if (transient[s.index].second > 0) {
        a.free(transient[s.index].first);
      }
    }
    conv = nullptr;
  };
  try {
    for (const auto& rec : t.records) {
      ++r.events;
      cur = &rec;
      if (conv) {
        // The convolution's own output: the measured output step it stands for, then the steps up to the next.
        if (rec.kind == TraceRecord::Kind::Malloc && rec.op == conv_rec->op &&
            (*conv)[conv_pos].kind == ConvWorkspaceStep::Kind::Output) {
          ++conv_pos;
        } else {
          conv_steps(true);
        }
      }
      switch (rec.kind) {
        case TraceRecord::Kind::Malloc:
          asking = rec.bytes;
          // An empty storage takes no block (PyTorch allocates only when size != 0).
          if (rec.bytes > 0) handle[rec.slot] = a.malloc(rec.bytes, rec.stream);
          size[rec.slot] = rec.bytes;
          live += rec.bytes;
          if (live > r.live_peak) {
            r.live_peak = live;
            r.live_peak_at = at(rec);
          }
          note_reserved(rec);
          break;
        case TraceRecord::Kind::Free:
          if (size[rec.slot] > 0) a.free(handle[rec.slot]);
          live -= size[rec.slot];
          break;
        case TraceRecord::Kind::EmptyCache:
          a.empty_cache();
          ++r.empty_caches;
          break;
        case TraceRecord::Kind::MemoryFraction:
          // PyTorch: cudaMalloc past fraction × the device's total memory fails (then the cache is
          // freed and the request retried). Never above what the GPU leaves beside the context.
          if (o.device_total > 0) {
            // Under a memory fraction PyTorch's garbage collector frees cached blocks by their age
            // in allocator calls, which the replay does not follow: no estimate rather than a wrong one.
            if (t.allocator.garbage_collection_threshold > 0)
              throw UserError(fmt::format(
                  "{}: PYTORCH_CUDA_ALLOC_CONF garbage_collection_threshold with set_per_process_memory_fraction "
                  "is not modelled (colo models the caching allocator without its garbage collector)",
                  t.source));
            const auto limit = static_cast<std::uint64_t>(rec.fraction * static_cast<double>(o.device_total));
            r.fraction_limit = limit;
            a.set_device_capacity(std::min(limit, o.capacity));
          }
          break;
        case TraceRecord::Kind::Conv: {
          ++r.convs;
          if (rec.key < keys.size()) {  // a keyed convolution, with a table
            const KeySteps& k = keys[rec.key];
            const std::vector<ConvWorkspaceStep>* steps = k.measured;
            if (steps) {
              ++r.convs_measured;
            } else if (!k.near.empty()) {
              // The run's neighbour, or the farthest there is when the class has fewer shapes.
              steps = &k.near[std::min(rank, k.near.size() - 1)];
              ++r.convs_from_neighbours;
            }
            if (steps) {
              conv = steps;
              conv_pos = 0;
              conv_rec = &rec;
              transient.clear();
              conv_steps(false);
              break;
            }
          }
          const double ratio = rec.strided ? o.strided_conv_workspace_ratio : o.conv_workspace_ratio;
          const double ws = static_cast<double>(o.conv_workspace) +
                            ratio * static_cast<double>(std::max(rec.bytes, rec.out_bytes));
          if (ws >= 1.0) {
            asking = static_cast<std::uint64_t>(std::min(ws, static_cast<double>(kMaxTraceBytes)));
            const auto h = a.malloc(asking);
            note_reserved(rec);
            a.free(h);
          }
          break;
        }
        case TraceRecord::Kind::Matmul:
          ++r.matmuls;
          if (!cublas && o.cublas_workspace > 0) {
            asking = o.cublas_workspace;
            a.malloc(o.cublas_workspace);  // kept for the process' life, like cuBLAS' handle workspace
            note_reserved(rec);
          }
          cublas = true;
          break;
        case TraceRecord::Kind::Step:
          step = static_cast<int>(rec.bytes) + 1;
          break;
      }
      if (conv && rec.kind == TraceRecord::Kind::Malloc) conv_steps(false);
    }
    conv_steps(true);
  } catch (const CachingAllocator::OutOfMemory&) {
    r.out_of_memory = true;
    r.oom_at = cur ? at(*cur) : "";
    r.oom_request = asking;
    r.oom_reserved = a.stats().reserved;
  }
  r.reserved_peak = std::max(r.reserved_peak, a.stats().reserved_peak);
  r.allocated_peak = a.stats().allocated_peak;
  return r;
}

}  // namespace

TraceReplay replay_probe_trace(const ProbeTrace& t, const TraceReplayOptions& o) {
  std::vector<KeySteps> keys;
  std::size_t runs = 1;
  if (o.conv_table) {
    keys.resize(t.conv_keys.size());
    const bool neighbours = o.conv_neighbours && o.conv_neighbour_count > 0;
    for (std::size_t k = 0; k < t.conv_keys.size(); ++k) {
      keys[k].measured = o.conv_table->find(t.conv_keys[k]);
      if (keys[k].measured || !neighbours) continue;
      const auto shape = parse_conv_shape(t.conv_keys[k]);
      if (!shape) continue;  // not a shape colo can place: the profile's ratios
      for (const auto& n : o.conv_neighbours->nearest(*shape, o.conv_neighbour_count))
        keys[k].near.push_back(ConvWorkspaceNeighbours::scaled_steps(n, kMaxTraceBytes));
      runs = std::max(runs, keys[k].near.size());
    }
  }
  // The largest peak of the runs (an out of memory beats any peak): which of the near shapes'
  // workspaces the GPU would pick is unknown, and the scheduler must not place the job short.
  TraceReplay best;
  for (std::size_t rank = 0; rank < runs; ++rank) {
    TraceReplay r = replay_once(t, o, keys, rank);
    r.neighbour_runs = runs;
    r.worst_run = rank;
    const bool worse = rank == 0 || (r.out_of_memory && !best.out_of_memory) ||
                       (r.out_of_memory == best.out_of_memory && r.reserved_peak > best.reserved_peak);
    if (worse) best = std::move(r);
    if (best.out_of_memory) break;
  }
  return best;
}

}  // namespace colo::estimate
