// Hand-worked allocation sequences; each comment derives the expected numbers from the rules in
// caching_allocator.h (PyTorch's CUDACachingAllocator.cpp).
#include "estimate/allocator/caching_allocator.h"

#include <gtest/gtest.h>

namespace colo::estimate {
namespace {

constexpr std::uint64_t MiB = 1048576;

TEST(CachingAllocator, RoundsAndPacksSmallRequestsInto2MiBSegments) {
  CachingAllocator a;
  // 100 B -> 512 B (kMinBlockSize); small pool miss -> one 2 MiB segment, split 512 | rest.
  auto h1 = a.malloc(100);
  EXPECT_EQ(a.block_size(h1), 512u);
  EXPECT_EQ(a.stats().reserved, 2 * MiB);
  // 1000 B -> 1024 B, carved from the cached remainder of the same segment: no new segment.
  auto h2 = a.malloc(1000);
  EXPECT_EQ(a.block_size(h2), 1024u);
  EXPECT_EQ(a.stats().reserved, 2 * MiB);
  EXPECT_EQ(a.stats().allocated, 1536u);
  EXPECT_EQ(a.stats().requested, 1100u);
  // 1 MiB exactly is still small: 1536 + 1 MiB fits into the 2 MiB segment's remainder.
  a.malloc(MiB);
  EXPECT_EQ(a.stats().reserved, 2 * MiB);
  // Another 1 MiB does not fit in the 2 MiB - 1 MiB - 1536 B left: a second segment.
  a.malloc(MiB);
  EXPECT_EQ(a.stats().reserved, 4 * MiB);
  EXPECT_EQ(a.stats().cuda_mallocs, 2u);
}

TEST(CachingAllocator, MidSizedRequestsShareA20MiBSegmentAndLargeOnesAreRoundedTo2MiB) {
  CachingAllocator a;
  // 5 MiB < kMinLargeAlloc -> 20 MiB segment, split 5 | 15 (15 MiB > kSmallSize).
  auto x = a.malloc(5 * MiB);
  // Second 5 MiB: best fit is the cached 15 MiB remainder -> split 5 | 10.
  auto y = a.malloc(5 * MiB);
  EXPECT_EQ(a.stats().reserved, 20 * MiB);
  // 12 MiB: cached 10 MiB does not fit -> new segment of 12 MiB (multiple of 2 MiB), no split.
  a.malloc(12 * MiB);
  EXPECT_EQ(a.stats().reserved, 32 * MiB);
  EXPECT_EQ(a.stats().allocated, 22 * MiB);
  // Freeing x and y merges x + y + the 10 MiB rest back into one free 20 MiB block.
  a.free(x);
  a.free(y);
  EXPECT_EQ(a.stats().allocated, 12 * MiB);
  // 15 MiB is served from that block (split 15 | 5): still 32 MiB reserved, peak too.
  auto z = a.malloc(15 * MiB);
  EXPECT_EQ(a.block_size(z), 15 * MiB);
  EXPECT_EQ(a.stats().reserved, 32 * MiB);
  EXPECT_EQ(a.stats().reserved_peak, 32 * MiB);
  EXPECT_EQ(a.stats().allocated_peak, 27 * MiB);
}

TEST(CachingAllocator, LargeRemainderOfOneMiBIsNotSplit) {
  CachingAllocator a;
  // 11 MiB -> segment 12 MiB; remaining 1 MiB is not > kSmallSize, so the whole 12 MiB is used.
  auto h = a.malloc(11 * MiB);
  EXPECT_EQ(a.block_size(h), 12 * MiB);
  EXPECT_EQ(a.stats().allocated, 12 * MiB);
  // 10 MiB + 1 B -> rounded to 10 MiB + 512 B (>= kMinLargeAlloc) -> segment 12 MiB; the
  // remaining 2 MiB - 512 B is > 1 MiB, so it is split off and cached.
  auto g = a.malloc(10 * MiB + 1);
  EXPECT_EQ(a.block_size(g), 10 * MiB + 512);
  EXPECT_EQ(a.stats().reserved, 24 * MiB);
}

TEST(CachingAllocator, BestFitPicksTheSmallestCachedBlockThatFits) {
  CachingAllocator a;
  // Three exact segments 12, 14, 16 MiB, all freed and cached.
  auto p = a.malloc(12 * MiB), q = a.malloc(14 * MiB), r = a.malloc(16 * MiB);
  a.free(p);
  a.free(q);
  a.free(r);
  EXPECT_EQ(a.stats().reserved, 42 * MiB);
  // 13 MiB: smallest fit is the 14 MiB block; rest 1 MiB is not split -> block of 14 MiB.
  auto s = a.malloc(13 * MiB);
  EXPECT_EQ(a.block_size(s), 14 * MiB);
  EXPECT_EQ(a.stats().reserved, 42 * MiB);
  EXPECT_EQ(a.stats().cuda_mallocs, 3u);
}

TEST(CachingAllocator, BlocksAreNotSharedAcrossStreams) {
  CachingAllocator a;
  auto h = a.malloc(100, /*stream=*/0);
  a.free(h);
  // The cached 2 MiB segment belongs to stream 0; stream 1 needs its own.
  a.malloc(100, /*stream=*/1);
  EXPECT_EQ(a.stats().reserved, 4 * MiB);
}

TEST(CachingAllocator, OnCapacityMissReleasesCachedSegmentsAndRetries) {
  CachingAllocator::Config cfg;
  cfg.device_capacity = 40 * MiB;
  CachingAllocator a(cfg);
  auto h = a.malloc(20 * MiB);  // one 20 MiB segment
  a.free(h);                    // cached, still reserved
  // 30 MiB: no cached fit; 20 + 30 > 40 -> release the unsplit cached 20 MiB, retry: 30 <= 40.
  a.malloc(30 * MiB);
  EXPECT_EQ(a.stats().reserved, 30 * MiB);
  EXPECT_EQ(a.stats().reserved_peak, 30 * MiB);
  EXPECT_EQ(a.stats().cuda_frees, 1u);
  EXPECT_EQ(a.stats().alloc_retries, 1u);
  // 20 MiB more: 30 + 20 > 40 and nothing cached to release -> out of memory.
  EXPECT_THROW(a.malloc(20 * MiB), CachingAllocator::OutOfMemory);
}

TEST(CachingAllocator, SplitSegmentsAreNotReleasedOnRetry) {
  CachingAllocator::Config cfg;
  cfg.device_capacity = 30 * MiB;
  CachingAllocator a(cfg);
  auto x = a.malloc(4 * MiB);  // 20 MiB segment split 4 | 16
  (void)x;
  // 12 MiB fits the cached 16 MiB remainder (split 12 | 4): no new segment.
  a.malloc(12 * MiB);
  EXPECT_EQ(a.stats().reserved, 20 * MiB);
  // 12 MiB again: the cached 4 MiB does not fit; 20 + 12 > 30; the cached 4 MiB is part of a split
  // segment, so nothing can be released -> out of memory.
  EXPECT_THROW(a.malloc(12 * MiB), CachingAllocator::OutOfMemory);
}

TEST(CachingAllocator, MaxSplitSizeKeepsOversizeBlocksWhole) {
  CachingAllocator::Config cfg;
  cfg.max_split_size = 32 * MiB;
  CachingAllocator a(cfg);
  auto big = a.malloc(64 * MiB);
  a.free(big);
  // 8 MiB < max_split_size must not take the cached oversize 64 MiB block: new 20 MiB segment.
  a.malloc(8 * MiB);
  EXPECT_EQ(a.stats().reserved, 84 * MiB);
  // 60 MiB >= max_split_size and within kLargeBuffer of 64 MiB: reuses it whole.
  auto h = a.malloc(60 * MiB);
  EXPECT_EQ(a.block_size(h), 64 * MiB);
  EXPECT_EQ(a.stats().reserved, 84 * MiB);
}

TEST(CachingAllocator, EmptyCacheReleasesOnlyWholeFreeSegments) {
  CachingAllocator a;
  auto x = a.malloc(12 * MiB);
  auto y = a.malloc(3 * MiB);  // 20 MiB segment, split
  a.free(x);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved, 20 * MiB);
  a.free(y);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved, 0u);
  EXPECT_EQ(a.stats().reserved_peak, 32 * MiB);
}

TEST(CachingAllocator, FreeOfUnknownHandleThrows) {
  CachingAllocator a;
  auto h = a.malloc(1);
  a.free(h);
  EXPECT_THROW(a.free(h), std::invalid_argument);
  EXPECT_THROW(a.free(12345), std::invalid_argument);
}

}  // namespace
}  // namespace colo::estimate
