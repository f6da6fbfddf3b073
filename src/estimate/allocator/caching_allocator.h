#pragma once
// A faithful, device-free model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp,
// native backend) under the settings of PYTORCH_CUDA_ALLOC_CONF (allocator_settings.h; default: no
// expandable segments, max_split_size unlimited, no power-of-two rounding). It replays
// malloc/free events and tracks what the real allocator would have *allocated* (handed to tensors)
// and *reserved* (cudaMalloc'ed segments or mapped pages, which is what nvidia-smi shows on top
// of the CUDA context).
//
// Rules modelled (names as in PyTorch):
//   - every request is rounded up to a multiple of kMinBlockSize (512 B), or with
//     roundup_power2_divisions N for its size to the next of N equal steps between two powers of 2;
//   - requests <= kSmallSize (1 MiB) use the small pool, others the large pool;
//   - a cache miss cudaMallocs a segment: kSmallBuffer (2 MiB) for small requests, kLargeBuffer
//     (20 MiB) for requests < kMinLargeAlloc (10 MiB), else the request rounded up to kRoundLarge (2 MiB);
//   - best fit: the smallest cached block of the same stream and pool that fits (ties: lowest address);
//     blocks >= max_split_size serve only requests >= max_split_size, within max_non_split_rounding;
//   - a block is split if the rest is >= kMinBlockSize (small pool) or > kSmallSize (large pool,
//     requests below max_split_size only);
//   - freed blocks merge with free neighbours of the same segment and stay cached (never released);
//   - when a cudaMalloc would exceed the device capacity: with max_split_size set, enough oversize
//     cached segments are released first; then all unsplit cached segments, and the cudaMalloc is
//     retried once; if it still does not fit, OutOfMemory is thrown.
//   - expandable_segments:True: one segment per stream and pool whose address space is mapped in
//     pages (2 MiB small pool, 20 MiB large pool) at the lowest address with room; a miss maps
//     pages (merging with the free block before them) instead of a new segment; blocks split at any
//     remainder >= 512 B; releasing the cache unmaps the whole free pages of free blocks.
//   Not modelled: garbage_collection_threshold (it acts only under set_per_process_memory_fraction:
//   the trace estimator refuses that pair), CUDA graphs' private pools.
#include <cstdint>
#include <limits>
#include <memory_resource>
#include <set>
#include <stdexcept>
#include <vector>

#include "estimate/allocator/allocator_settings.h"

namespace colo::estimate {

class CachingAllocator {
 public:
  static constexpr std::uint64_t kMinBlockSize = 512;
  static constexpr std::uint64_t kSmallSize = 1048576;
  static constexpr std::uint64_t kSmallBuffer = 2097152;
  static constexpr std::uint64_t kLargeBuffer = 20971520;
  static constexpr std::uint64_t kMinLargeAlloc = 10485760;
  static constexpr std::uint64_t kRoundLarge = 2097152;

  struct Config {
    std::uint64_t device_capacity = std::numeric_limits<std::uint64_t>::max();  // bytes cudaMalloc may take
    AllocatorSettings settings;                                                  // PYTORCH_CUDA_ALLOC_CONF
  };

  struct Stats {
    std::uint64_t allocated = 0;       // bytes in blocks handed out (rounded sizes)
    std::uint64_t allocated_peak = 0;
    std::uint64_t reserved = 0;        // bytes in cudaMalloc'ed segments
    std::uint64_t reserved_peak = 0;
    std::uint64_t requested = 0;       // bytes asked for (unrounded)
    std::uint64_t requested_peak = 0;
    std::uint64_t segments = 0;        // live segments (expandable: live expandable segments)
    std::uint64_t cuda_mallocs = 0;    // segments ever created (expandable: page ranges mapped)
    std::uint64_t cuda_frees = 0;      // segments released (expandable: page ranges unmapped) on a retry or empty_cache()
    std::uint64_t alloc_retries = 0;   // cudaMallocs that first failed and were retried after a release
  };

  // Thrown by malloc when even after releasing the cache the segment does not fit.
  class OutOfMemory : public std::runtime_error {
   public:
    using std::runtime_error::runtime_error;
  };

  // Identifies a live allocation (the model has no real addresses to return).
  using Handle = std::uint32_t;

  CachingAllocator();
  explicit CachingAllocator(Config cfg);
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  Handle malloc(std::uint64_t bytes, int stream = 0);
  void free(Handle h);              // throws std::invalid_argument for a handle that is not live
  void empty_cache();               // torch.cuda.empty_cache(): release every unsplit cached segment
  // torch.cuda.set_per_process_memory_fraction: cudaMalloc fails past this many reserved bytes
  // from now on (what is already reserved stays; the next request frees the cache and retries).
  void set_device_capacity(std::uint64_t bytes) {
    cfg_.device_capacity = bytes;
    fraction_set_ = true;
  }
  std::uint64_t device_capacity() const { return cfg_.device_capacity; }
  void reset_peaks();
  const Stats& stats() const { return stats_; }
  std::uint64_t block_size(Handle h) const;  // the rounded size a live allocation occupies

  static std::uint64_t round_size(std::uint64_t bytes);  // default settings
  std::uint64_t round(std::uint64_t bytes) const;         // under this allocator's settings
  static std::uint64_t allocation_size(std::uint64_t rounded);  // segment size for a cache miss

 private:
  struct Block {
    std::uint64_t size = 0;
    std::uint64_t addr = 0;
    std::uint64_t requested = 0;
    std::uint32_t prev = kNone, next = kNone;
    int stream = 0;
    bool small = false;
    bool allocated = false;
    bool live = false;                 // slot in use (allocated or cached)
    bool expandable = false;           // part of an expandable segment
    bool mapped = true;                // expandable: backed by pages (unmapped address space otherwise)
  };
  struct Key {                         // ordering of PyTorch's BlockComparator: stream, size, address
    int stream;
    std::uint64_t size;
    std::uint64_t addr;
    std::uint32_t idx;
    bool operator<(const Key& o) const {
      if (stream != o.stream) return stream < o.stream;
      if (size != o.size) return size < o.size;
      return addr < o.addr;
    }
  };
  using Pool = std::pmr::set<Key>;
  struct AddrKey {                     // unmapped address space, by stream and address
    int stream;
    std::uint64_t addr;
    std::uint32_t idx;
    bool operator<(const AddrKey& o) const { return stream != o.stream ? stream < o.stream : addr < o.addr; }
  };
  using Unmapped = std::pmr::set<AddrKey>;
  static constexpr std::uint32_t kNone = 0xffffffffu;

  std::uint32_t new_block();
  void drop_block(std::uint32_t i);
  Pool& pool_of(const Block& b) { return b.small ? small_ : large_; }
  Unmapped& unmapped_of(const Block& b) { return b.small ? small_unmapped_ : large_unmapped_; }
  Key key_of(std::uint32_t i) const { return {blocks_[i].stream, blocks_[i].size, blocks_[i].addr, i}; }
  bool should_split(const Block& b, std::uint64_t size) const;
  std::uint32_t find_free_block(Pool& pool, int stream, std::uint64_t size);
  std::uint32_t find_free_expandable_block(Pool& pool, int stream, std::uint64_t size);
  bool try_cuda_malloc(std::uint64_t size);
  std::uint32_t alloc_block(bool small, int stream, std::uint64_t size);
  std::uint32_t alloc_expandable_block(bool small, int stream, std::uint64_t size);
  bool map_block(std::uint32_t i, std::uint64_t size);
  void unmap_block(std::uint32_t i);
  void release_segment(std::uint32_t i);
  bool release_available_cached_segments(bool small, int stream, std::uint64_t size);
  void release_cached_segments();
  bool merge_into(std::uint32_t dst, std::uint32_t src);

  Config cfg_;
  Stats stats_;
  std::vector<Block> blocks_;
  std::vector<std::uint32_t> free_slots_;
  std::pmr::unsynchronized_pool_resource node_memory_;
  Pool small_{&node_memory_};
  Pool large_{&node_memory_};
  Unmapped small_unmapped_{&node_memory_};
  Unmapped large_unmapped_{&node_memory_};
  std::uint64_t physical_capacity_;       // the device's, fixed (expandable pages are mapped against it)
  bool fraction_set_ = false;             // set_per_process_memory_fraction: a hard limit on reserved bytes
  std::uint64_t next_addr_ = 1ull << 32;  // simulated device addresses, one range per segment
};

}  // namespace colo::estimate
