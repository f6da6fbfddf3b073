#include "estimate/allocator/caching_allocator.h"

#include <string>

namespace colo::estimate {

CachingAllocator::CachingAllocator() : CachingAllocator(Config{}) {}
CachingAllocator::CachingAllocator(Config cfg) : cfg_(cfg) { blocks_.reserve(1024); }

std::uint64_t CachingAllocator::round_size(std::uint64_t bytes) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  return kMinBlockSize * ((bytes + kMinBlockSize - 1) / kMinBlockSize);
}

std::uint64_t CachingAllocator::allocation_size(std::uint64_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

std::uint32_t CachingAllocator::new_block() {
  if (!free_slots_.empty()) {
    auto i = free_slots_.back();
    free_slots_.pop_back();
    blocks_[i] = Block{};
    blocks_[i].live = true;
    return i;
  }
  blocks_.push_back(Block{});
  blocks_.back().live = true;
  return static_cast<std::uint32_t>(blocks_.size() - 1);
}

void CachingAllocator::drop_block(std::uint32_t i) {
  blocks_[i].live = false;
  free_slots_.push_back(i);
}

bool CachingAllocator::should_split(const Block& b, std::uint64_t size) const {
  const std::uint64_t remaining = b.size - size;
  if (b.small) return remaining >= kMinBlockSize;
  return size < cfg_.max_split_size && remaining > kSmallSize;
}

std::uint32_t CachingAllocator::find_free_block(Pool& pool, int stream, std::uint64_t size) {
  auto it = pool.lower_bound(Key{stream, size, 0, 0});
  if (it == pool.end() || it->stream != stream) return kNone;
  // Oversize cached blocks (>= max_split_size) only serve requests that are themselves oversize
  // and within kLargeBuffer of the block (get_free_block in PyTorch).
  if (size < cfg_.max_split_size && it->size >= cfg_.max_split_size) return kNone;
  if (size >= cfg_.max_split_size && it->size >= size + kLargeBuffer) return kNone;
  const auto idx = it->idx;
  pool.erase(it);
  return idx;
}

bool CachingAllocator::try_cuda_malloc(std::uint64_t size) {
  return stats_.reserved + size <= cfg_.device_capacity && stats_.reserved + size >= size;
}

void CachingAllocator::release_cached_segments() {
  // release_cached_blocks(): every cached block that is a whole segment (not split) goes back.
  for (Pool* pool : {&small_, &large_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      const Block& b = blocks_[it->idx];
      if (b.prev == kNone && b.next == kNone) {
        stats_.reserved -= b.size;
        stats_.segments -= 1;
        stats_.cuda_frees += 1;
        drop_block(it->idx);
        it = pool->erase(it);
      } else {
        ++it;
      }
    }
  }
}

CachingAllocator::Handle CachingAllocator::malloc(std::uint64_t bytes, int stream) {
  const std::uint64_t size = round_size(bytes);
  const bool small = size <= kSmallSize;
  Pool& pool = small ? small_ : large_;

  std::uint32_t bi = find_free_block(pool, stream, size);
  if (bi == kNone) {
    const std::uint64_t alloc = allocation_size(size);
    if (!try_cuda_malloc(alloc)) {
      stats_.alloc_retries += 1;
      release_cached_segments();
      if (!try_cuda_malloc(alloc)) {
        throw OutOfMemory("out of memory: tried to allocate " + std::to_string(alloc) + " bytes with " +
                          std::to_string(stats_.reserved) + " reserved of " +
                          std::to_string(cfg_.device_capacity));
      }
    }
    bi = new_block();
    Block& b = blocks_[bi];
    b.size = alloc;
    b.addr = next_addr_;
    b.stream = stream;
    b.small = small;
    next_addr_ += alloc + kRoundLarge;  // keep segments apart so they never look adjacent
    stats_.reserved += alloc;
    stats_.segments += 1;
    stats_.cuda_mallocs += 1;
    if (stats_.reserved > stats_.reserved_peak) stats_.reserved_peak = stats_.reserved;
  }

  if (should_split(blocks_[bi], size)) {
    // The front part is handed out, the remainder stays cached (same segment, higher address).
    const std::uint32_t ri = new_block();
    Block& b = blocks_[bi];
    Block& r = blocks_[ri];
    r.size = b.size - size;
    r.addr = b.addr + size;
    r.stream = b.stream;
    r.small = b.small;
    r.prev = bi;
    r.next = b.next;
    if (r.next != kNone) blocks_[r.next].prev = ri;
    b.next = ri;
    b.size = size;
    pool.insert(key_of(ri));
  }

  Block& b = blocks_[bi];
  b.allocated = true;
  b.requested = bytes;
  stats_.allocated += b.size;
  stats_.requested += bytes;
  if (stats_.allocated > stats_.allocated_peak) stats_.allocated_peak = stats_.allocated;
  if (stats_.requested > stats_.requested_peak) stats_.requested_peak = stats_.requested;
  return bi;
}

void CachingAllocator::merge_into(std::uint32_t dst, std::uint32_t src) {
  if (src == kNone) return;
  Block& s = blocks_[src];
  if (s.allocated) return;
  Block& d = blocks_[dst];
  pool_of(s).erase(key_of(src));
  if (d.prev == src) {
    d.addr = s.addr;
    d.prev = s.prev;
    if (d.prev != kNone) blocks_[d.prev].next = dst;
  } else {
    d.next = s.next;
    if (d.next != kNone) blocks_[d.next].prev = dst;
  }
  d.size += s.size;
  drop_block(src);
}

void CachingAllocator::free(Handle h) {
  if (h >= blocks_.size() || !blocks_[h].live || !blocks_[h].allocated)
    throw std::invalid_argument("free of a handle that is not a live allocation: " + std::to_string(h));
  Block& b = blocks_[h];
  b.allocated = false;
  stats_.allocated -= b.size;
  stats_.requested -= b.requested;
  merge_into(h, blocks_[h].prev);
  merge_into(h, blocks_[h].next);
  pool_of(blocks_[h]).insert(key_of(h));
}

void CachingAllocator::empty_cache() { release_cached_segments(); }

void CachingAllocator::reset_peaks() {
  stats_.allocated_peak = stats_.allocated;
  stats_.reserved_peak = stats_.reserved;
  stats_.requested_peak = stats_.requested;
}

std::uint64_t CachingAllocator::block_size(Handle h) const {
  if (h >= blocks_.size() || !blocks_[h].live || !blocks_[h].allocated)
    throw std::invalid_argument("not a live allocation: " + std::to_string(h));
  return blocks_[h].size;
}

}  // namespace colo::estimate
