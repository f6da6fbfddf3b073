#include "estimate/allocator/caching_allocator.h"

#include <algorithm>
#include <bit>
#include <string>

namespace colo::estimate {

namespace {

// Expandable segments map pages of 2 MiB (small pool) or 20 MiB (large pool), and reserve address
// space for 9/8 of the device (ExpandableSegment in CUDACachingAllocator.cpp).
std::uint64_t page_of(bool small) { return small ? CachingAllocator::kSmallBuffer : CachingAllocator::kLargeBuffer; }
std::uint64_t align_up(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }
constexpr std::uint64_t kMaxAddressSpace = 1ull << 46;

}  // namespace

CachingAllocator::CachingAllocator() : CachingAllocator(Config{}) {}
CachingAllocator::CachingAllocator(Config cfg) : cfg_(cfg), physical_capacity_(cfg.device_capacity) {
  blocks_.reserve(1024);
}

std::uint64_t CachingAllocator::round_size(std::uint64_t bytes) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  return kMinBlockSize * ((bytes + kMinBlockSize - 1) / kMinBlockSize);
}

std::uint64_t CachingAllocator::round(std::uint64_t bytes) const {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  // roundup_power2_divisions: the interval of sizes [2^k, 2^(k+1)) from 1 MiB (index 0) to 32 GiB.
  const int index = std::clamp(static_cast<int>(std::bit_width(bytes)) - 1 - 20, 0,
                               static_cast<int>(AllocatorSettings::kRoundupIntervals) - 1);
  const std::uint64_t divisions = cfg_.settings.roundup_power2_divisions[static_cast<std::size_t>(index)];
  if (divisions > 1 && bytes > kMinBlockSize * divisions) {
    if (std::has_single_bit(bytes)) return bytes;
    const std::uint64_t floor = std::bit_floor(bytes);
    const std::uint64_t step = floor >> (std::bit_width(divisions) - 1);
    if (step == 0) return floor << 1;
    const std::uint64_t down = bytes & ~(step - 1);
    return down == bytes ? bytes : down + step;
  }
  return round_size(bytes);
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
  if (b.small || cfg_.settings.expandable_segments) return remaining >= kMinBlockSize;
  return size < cfg_.settings.max_split_size && remaining > kSmallSize;
}

std::uint32_t CachingAllocator::find_free_block(Pool& pool, int stream, std::uint64_t size) {
  auto it = pool.lower_bound(Key{stream, size, 0, 0});
  if (it == pool.end() || it->stream != stream) return kNone;
  if (cfg_.settings.expandable_segments && blocks_[it->idx].expandable) {
    // get_free_block: a block followed by unmapped address space counts as the size it can grow
    // to, so a smaller one further up the order may be the better fit.
    auto growable = [&](std::uint32_t i) {
      const Block& b = blocks_[i];
      return b.size + (b.next != kNone && !blocks_[b.next].mapped ? blocks_[b.next].size : 0);
    };
    auto next = std::next(it);
    while (blocks_[it->idx].expandable && next != pool.end() && next->stream == stream &&
           growable(next->idx) < growable(it->idx))
      it = next++;
  }
  // Oversize cached blocks (>= max_split_size) only serve requests that are themselves oversize
  // and within max_non_split_rounding of the block (get_free_block in PyTorch).
  const auto& s = cfg_.settings;
  if (size < s.max_split_size && it->size >= s.max_split_size) return kNone;
  if (size >= s.max_split_size && it->size - size >= s.max_non_split_rounding) return kNone;
  const auto idx = it->idx;
  pool.erase(it);
  return idx;
}

bool CachingAllocator::try_cuda_malloc(std::uint64_t size) {
  return stats_.reserved + size <= cfg_.device_capacity && stats_.reserved + size >= size;
}

void CachingAllocator::release_segment(std::uint32_t i) {
  const Block& b = blocks_[i];
  stats_.reserved -= b.size;
  stats_.segments -= 1;
  stats_.cuda_frees += 1;
  drop_block(i);
}

bool CachingAllocator::release_available_cached_segments(bool small, int stream, std::uint64_t size) {
  // release_available_cached_blocks: with max_split_size set, free the smallest oversize cached
  // segment that covers the request, else the largest ones until together they do.
  const std::uint64_t max_split = cfg_.settings.max_split_size;
  if (max_split == std::numeric_limits<std::uint64_t>::max() || cfg_.settings.expandable_segments) return false;
  Pool& pool = small ? small_ : large_;
  const std::uint64_t want = std::max(size, max_split);
  auto whole = [&](const Key& k) { return blocks_[k.idx].prev == kNone && blocks_[k.idx].next == kNone; };
  auto it = pool.lower_bound(Key{stream, want, 0, 0});
  if (it != pool.end() && it->stream == stream) {
    if (!whole(*it)) return false;
    const auto idx = it->idx;
    pool.erase(it);
    release_segment(idx);
    return true;
  }
  if (it == pool.begin()) return false;
  std::vector<Key> victims;
  std::uint64_t total = 0;
  for (--it; total < want && it->size >= max_split && it->stream == stream && whole(*it); --it) {
    victims.push_back(*it);
    total += it->size;
    if (it == pool.begin()) break;
  }
  for (const Key& k : victims) {
    pool.erase(k);
    release_segment(k.idx);
  }
  return total >= want;
}

void CachingAllocator::release_cached_segments() {
  // release_cached_blocks(): every cached block that is a whole segment (not split) goes back;
  // expandable segments unmap the whole free pages of their free blocks.
  std::vector<std::uint32_t> to_unmap;
  for (Pool* pool : {&large_, &small_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      const Block& b = blocks_[it->idx];
      if (b.expandable) {
        to_unmap.push_back(it->idx);
        ++it;
      } else if (b.prev == kNone && b.next == kNone) {
        const auto idx = it->idx;
        it = pool->erase(it);
        release_segment(idx);
      } else {
        ++it;
      }
    }
  }
  for (const std::uint32_t i : to_unmap) {
    unmap_block(i);
    const Block& b = blocks_[i];
    if (!b.mapped && b.prev == kNone && b.next == kNone) {  // the whole segment is unmapped: gone
      unmapped_of(b).erase(AddrKey{b.stream, b.addr, i});
      stats_.segments -= 1;
      drop_block(i);
    }
  }
}

void CachingAllocator::unmap_block(std::uint32_t i) {
  const std::uint64_t page = page_of(blocks_[i].small);
  const std::uint64_t begin = align_up(blocks_[i].addr, page);
  const std::uint64_t end = (blocks_[i].addr + blocks_[i].size) / page * page;
  if (begin >= end) return;  // no whole page free
  pool_of(blocks_[i]).erase(key_of(i));
  if (begin > blocks_[i].addr) {  // the free part before the first whole page stays mapped
    const std::uint32_t f = new_block();
    Block& b = blocks_[i];
    blocks_[f] = Block{begin - b.addr, b.addr, 0, b.prev, i, b.stream, b.small, false, true, true, true};
    if (b.prev != kNone) blocks_[b.prev].next = f;
    b.prev = f;
    pool_of(b).insert(key_of(f));
  }
  if (end < blocks_[i].addr + blocks_[i].size) {  // and after the last
    const std::uint32_t g = new_block();
    Block& b = blocks_[i];
    blocks_[g] = Block{b.addr + b.size - end, end, 0, i, b.next, b.stream, b.small, false, true, true, true};
    if (b.next != kNone) blocks_[b.next].prev = g;
    b.next = g;
    pool_of(b).insert(key_of(g));
  }
  Block& b = blocks_[i];
  b.addr = begin;
  b.size = end - begin;
  b.mapped = false;
  stats_.reserved -= b.size;
  stats_.cuda_frees += 1;
  merge_into(i, blocks_[i].prev);
  merge_into(i, blocks_[i].next);
  unmapped_of(blocks_[i]).insert(AddrKey{blocks_[i].stream, blocks_[i].addr, i});
}

bool CachingAllocator::map_block(std::uint32_t i, std::uint64_t size) {
  const std::uint64_t bytes = align_up(size, page_of(blocks_[i].small));  // <= the block: it is whole pages
  // cuMemCreate fails past the device's memory; the pages of a failed map are given back.
  if (stats_.reserved + bytes > physical_capacity_ || stats_.reserved + bytes < bytes) return false;
  unmapped_of(blocks_[i]).erase(AddrKey{blocks_[i].stream, blocks_[i].addr, i});
  blocks_[i].mapped = true;
  if (bytes < blocks_[i].size) {  // the rest of the address space stays unmapped
    const std::uint32_t r = new_block();
    Block& b = blocks_[i];
    blocks_[r] = Block{b.size - bytes, b.addr + bytes, 0, i, b.next, b.stream, b.small, false, true, true, false};
    if (b.next != kNone) blocks_[b.next].prev = r;
    b.next = r;
    b.size = bytes;
    unmapped_of(b).insert(AddrKey{b.stream, blocks_[r].addr, r});
  }
  merge_into(i, blocks_[i].prev);
  merge_into(i, blocks_[i].next);
  pool_of(blocks_[i]).insert(key_of(i));
  stats_.reserved += bytes;
  stats_.cuda_mallocs += 1;
  if (stats_.reserved > stats_.reserved_peak) stats_.reserved_peak = stats_.reserved;
  return true;
}

std::uint32_t CachingAllocator::alloc_expandable_block(bool small, int stream, std::uint64_t size) {
  // find_expandable_block: the lowest address with room, unmapped space plus the free block
  // before it; without one, a new segment of address space for this stream and pool.
  Unmapped& unmapped = small ? small_unmapped_ : large_unmapped_;
  auto free_at = [&](std::uint32_t i) { return i != kNone && !blocks_[i].allocated; };
  auto room = [&](std::uint32_t i) {
    std::uint64_t bytes = 0;
    for (; bytes < size && free_at(i); i = blocks_[i].next) bytes += blocks_[i].size;
    return bytes >= size;
  };
  std::uint32_t c = kNone;
  for (auto it = unmapped.lower_bound(AddrKey{stream, 0, 0}); it != unmapped.end() && it->stream == stream; ++it) {
    const std::uint32_t from = free_at(blocks_[it->idx].prev) ? blocks_[it->idx].prev : it->idx;
    if (room(from)) {
      c = from;
      break;
    }
  }
  if (c == kNone) {
    const std::uint64_t page = page_of(small);
    const std::uint64_t device = std::min(physical_capacity_, kMaxAddressSpace);
    const std::uint64_t space = align_up(device + device / 8, page);
    if (size > space) return kNone;
    c = new_block();
    Block& b = blocks_[c];
    b.size = space;
    b.addr = align_up(next_addr_, kLargeBuffer);
    b.stream = stream;
    b.small = small;
    b.expandable = true;
    b.mapped = false;
    next_addr_ = b.addr + space + kLargeBuffer;
    unmapped.insert(AddrKey{stream, b.addr, c});
    stats_.segments += 1;
  }
  if (!blocks_[c].mapped && !map_block(c, std::min(blocks_[c].size, size))) return kNone;
  while (blocks_[c].size < size) {  // free, then unmapped: map what is missing; it merges the free block
    const std::uint32_t n = blocks_[c].next;
    if (!map_block(n, std::min(size - blocks_[c].size, blocks_[n].size))) return kNone;
    c = n;
  }
  pool_of(blocks_[c]).erase(key_of(c));
  return c;
}

std::uint32_t CachingAllocator::alloc_block(bool small, int stream, std::uint64_t size) {
  const std::uint64_t alloc = allocation_size(size);
  // set_per_process_memory_fraction: checked against the segment size even for expandable segments.
  if (fraction_set_ && (stats_.reserved + alloc > cfg_.device_capacity || stats_.reserved + alloc < alloc))
    return kNone;
  if (cfg_.settings.expandable_segments) return alloc_expandable_block(small, stream, size);
  if (!try_cuda_malloc(alloc)) return kNone;
  const std::uint32_t bi = new_block();
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
  return bi;
}

CachingAllocator::Handle CachingAllocator::malloc(std::uint64_t bytes, int stream) {
  const std::uint64_t size = round(bytes);
  const bool small = size <= kSmallSize;
  Pool& pool = small ? small_ : large_;

  std::uint32_t bi = find_free_block(pool, stream, size);
  if (bi == kNone) {
    bi = alloc_block(small, stream, size);
    if (bi == kNone && release_available_cached_segments(small, stream, size)) bi = alloc_block(small, stream, size);
    if (bi == kNone) {
      stats_.alloc_retries += 1;
      release_cached_segments();
      bi = alloc_block(small, stream, size);
    }
    if (bi == kNone) {
      throw OutOfMemory("out of memory: tried to allocate " + std::to_string(allocation_size(size)) + " bytes with " +
                        std::to_string(stats_.reserved) + " reserved of " + std::to_string(cfg_.device_capacity));
    }
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
    r.expandable = b.expandable;
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

bool CachingAllocator::merge_into(std::uint32_t dst, std::uint32_t src) {
  if (src == kNone) return false;
  Block& s = blocks_[src];
  Block& d = blocks_[dst];
  if (s.allocated || s.mapped != d.mapped) return false;
  if (s.mapped)
    pool_of(s).erase(key_of(src));
  else
    unmapped_of(s).erase(AddrKey{s.stream, s.addr, src});
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
  return true;
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
