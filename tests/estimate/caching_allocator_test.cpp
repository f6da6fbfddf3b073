// Hand-worked allocation sequences; each comment derives the expected numbers from the rules in
// caching_allocator.h (PyTorch's CUDACachingAllocator.cpp).
#include "estimate/allocator/caching_allocator.h"
#include "core/units.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace colo::estimate {
namespace {


TEST(CachingAllocator, RoundsAndPacksSmallRequestsInto2MiBSegments) {
  CachingAllocator a;
  // 100 B -> 512 B (kMinBlockSize); small pool miss -> one 2 MiB segment, split 512 | rest.
  auto h1 = a.malloc(100);
  EXPECT_EQ(a.block_size(h1), 512u);
  EXPECT_EQ(a.stats().reserved, 2 * kBytesPerMiB);
  // 1000 B -> 1024 B, carved from the cached remainder of the same segment: no new segment.
  auto h2 = a.malloc(1000);
  EXPECT_EQ(a.block_size(h2), 1024u);
  EXPECT_EQ(a.stats().reserved, 2 * kBytesPerMiB);
  EXPECT_EQ(a.stats().allocated, 1536u);
  EXPECT_EQ(a.stats().requested, 1100u);
  // 1 MiB exactly is still small: 1536 + 1 MiB fits into the 2 MiB segment's remainder.
  a.malloc(kBytesPerMiB);
  EXPECT_EQ(a.stats().reserved, 2 * kBytesPerMiB);
  // Another 1 MiB does not fit in the 2 MiB - 1 MiB - 1536 B left: a second segment.
  a.malloc(kBytesPerMiB);
  EXPECT_EQ(a.stats().reserved, 4 * kBytesPerMiB);
  EXPECT_EQ(a.stats().cuda_mallocs, 2u);
}

TEST(CachingAllocator, MidSizedRequestsShareA20MiBSegmentAndLargeOnesAreRoundedTo2MiB) {
  CachingAllocator a;
  // 5 MiB < kMinLargeAlloc -> 20 MiB segment, split 5 | 15 (15 MiB > kSmallSize).
  auto x = a.malloc(5 * kBytesPerMiB);
  // Second 5 MiB: best fit is the cached 15 MiB remainder -> split 5 | 10.
  auto y = a.malloc(5 * kBytesPerMiB);
  EXPECT_EQ(a.stats().reserved, 20 * kBytesPerMiB);
  // 12 MiB: cached 10 MiB does not fit -> new segment of 12 MiB (multiple of 2 MiB), no split.
  a.malloc(12 * kBytesPerMiB);
  EXPECT_EQ(a.stats().reserved, 32 * kBytesPerMiB);
  EXPECT_EQ(a.stats().allocated, 22 * kBytesPerMiB);
  // Freeing x and y merges x + y + the 10 MiB rest back into one free 20 MiB block.
  a.free(x);
  a.free(y);
  EXPECT_EQ(a.stats().allocated, 12 * kBytesPerMiB);
  // 15 MiB is served from that block (split 15 | 5): still 32 MiB reserved, peak too.
  auto z = a.malloc(15 * kBytesPerMiB);
  EXPECT_EQ(a.block_size(z), 15 * kBytesPerMiB);
  EXPECT_EQ(a.stats().reserved, 32 * kBytesPerMiB);
  EXPECT_EQ(a.stats().reserved_peak, 32 * kBytesPerMiB);
  EXPECT_EQ(a.stats().allocated_peak, 27 * kBytesPerMiB);
}

TEST(CachingAllocator, LargeRemainderOfOneMiBIsNotSplit) {
  CachingAllocator a;
  // 11 MiB -> segment 12 MiB; remaining 1 MiB is not > kSmallSize, so the whole 12 MiB is used.
  auto h = a.malloc(11 * kBytesPerMiB);
  EXPECT_EQ(a.block_size(h), 12 * kBytesPerMiB);
  EXPECT_EQ(a.stats().allocated, 12 * kBytesPerMiB);
  // 10 MiB + 1 B -> rounded to 10 MiB + 512 B (>= kMinLargeAlloc) -> segment 12 MiB; the
  // remaining 2 MiB - 512 B is > 1 MiB, so it is split off and cached.
  auto g = a.malloc(10 * kBytesPerMiB + 1);
  EXPECT_EQ(a.block_size(g), 10 * kBytesPerMiB + 512);
  EXPECT_EQ(a.stats().reserved, 24 * kBytesPerMiB);
}

TEST(CachingAllocator, BestFitPicksTheSmallestCachedBlockThatFits) {
  CachingAllocator a;
  // Three exact segments 12, 14, 16 MiB, all freed and cached.
  auto p = a.malloc(12 * kBytesPerMiB), q = a.malloc(14 * kBytesPerMiB), r = a.malloc(16 * kBytesPerMiB);
  a.free(p);
  a.free(q);
  a.free(r);
  EXPECT_EQ(a.stats().reserved, 42 * kBytesPerMiB);
  // 13 MiB: smallest fit is the 14 MiB block; rest 1 MiB is not split -> block of 14 MiB.
  auto s = a.malloc(13 * kBytesPerMiB);
  EXPECT_EQ(a.block_size(s), 14 * kBytesPerMiB);
  EXPECT_EQ(a.stats().reserved, 42 * kBytesPerMiB);
  EXPECT_EQ(a.stats().cuda_mallocs, 3u);
}

TEST(CachingAllocator, BlocksAreNotSharedAcrossStreams) {
  CachingAllocator a;
  auto h = a.malloc(100, /*stream=*/0);
  a.free(h);
  // The cached 2 MiB segment belongs to stream 0; stream 1 needs its own.
  a.malloc(100, /*stream=*/1);
  EXPECT_EQ(a.stats().reserved, 4 * kBytesPerMiB);
}

TEST(CachingAllocator, OnCapacityMissReleasesCachedSegmentsAndRetries) {
  CachingAllocator::Config cfg;
  cfg.device_capacity = 40 * kBytesPerMiB;
  CachingAllocator a(cfg);
  auto h = a.malloc(20 * kBytesPerMiB);  // one 20 MiB segment
  a.free(h);                    // cached, still reserved
  // 30 MiB: no cached fit; 20 + 30 > 40 -> release the unsplit cached 20 MiB, retry: 30 <= 40.
  a.malloc(30 * kBytesPerMiB);
  EXPECT_EQ(a.stats().reserved, 30 * kBytesPerMiB);
  EXPECT_EQ(a.stats().reserved_peak, 30 * kBytesPerMiB);
  EXPECT_EQ(a.stats().cuda_frees, 1u);
  EXPECT_EQ(a.stats().alloc_retries, 1u);
  // 20 MiB more: 30 + 20 > 40 and nothing cached to release -> out of memory.
  EXPECT_THROW(a.malloc(20 * kBytesPerMiB), CachingAllocator::OutOfMemory);
}

TEST(CachingAllocator, SplitSegmentsAreNotReleasedOnRetry) {
  CachingAllocator::Config cfg;
  cfg.device_capacity = 30 * kBytesPerMiB;
  CachingAllocator a(cfg);
  auto x = a.malloc(4 * kBytesPerMiB);  // 20 MiB segment split 4 | 16
  (void)x;
  // 12 MiB fits the cached 16 MiB remainder (split 12 | 4): no new segment.
  a.malloc(12 * kBytesPerMiB);
  EXPECT_EQ(a.stats().reserved, 20 * kBytesPerMiB);
  // 12 MiB again: the cached 4 MiB does not fit; 20 + 12 > 30; the cached 4 MiB is part of a split
  // segment, so nothing can be released -> out of memory.
  EXPECT_THROW(a.malloc(12 * kBytesPerMiB), CachingAllocator::OutOfMemory);
}

TEST(CachingAllocator, MaxSplitSizeKeepsOversizeBlocksWhole) {
  CachingAllocator::Config cfg;
  cfg.settings.max_split_size = 32 * kBytesPerMiB;
  CachingAllocator a(cfg);
  auto big = a.malloc(64 * kBytesPerMiB);
  a.free(big);
  // 8 MiB < max_split_size must not take the cached oversize 64 MiB block: new 20 MiB segment.
  a.malloc(8 * kBytesPerMiB);
  EXPECT_EQ(a.stats().reserved, 84 * kBytesPerMiB);
  // 60 MiB >= max_split_size and within kLargeBuffer of 64 MiB: reuses it whole.
  auto h = a.malloc(60 * kBytesPerMiB);
  EXPECT_EQ(a.block_size(h), 64 * kBytesPerMiB);
  EXPECT_EQ(a.stats().reserved, 84 * kBytesPerMiB);
}

TEST(CachingAllocator, EmptyCacheReleasesOnlyWholeFreeSegments) {
  CachingAllocator a;
  auto x = a.malloc(12 * kBytesPerMiB);
  auto y = a.malloc(3 * kBytesPerMiB);  // 20 MiB segment, split
  a.free(x);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved, 20 * kBytesPerMiB);
  a.free(y);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved, 0u);
  EXPECT_EQ(a.stats().reserved_peak, 32 * kBytesPerMiB);
}

TEST(CachingAllocator, RoundupPower2DivisionsRoundToTheNextStepBetweenPowersOfTwo) {
  CachingAllocator::Config cfg;
  cfg.settings = parse_allocator_settings("roundup_power2_divisions:[256:1,>:4]");
  CachingAllocator a(cfg);
  // Intervals up to [256, 512) MiB have 1 division: plain 512-byte rounding.
  EXPECT_EQ(a.round(100 * kBytesPerMiB + 1), 100 * kBytesPerMiB + 512);
  EXPECT_EQ(a.round(300 * kBytesPerMiB + 1), 300 * kBytesPerMiB + 512);
  // Above the last interval named (">"): 4, so [512, 1024) MiB goes in steps of 128 MiB.
  EXPECT_EQ(a.round(600 * kBytesPerMiB + 1), 640 * kBytesPerMiB);
  EXPECT_EQ(a.round(640 * kBytesPerMiB), 640 * kBytesPerMiB);
  EXPECT_EQ(a.round(512 * kBytesPerMiB), 512 * kBytesPerMiB);  // a power of 2 stays
  auto h = a.malloc(600 * kBytesPerMiB + 1);
  EXPECT_EQ(a.block_size(h), 640 * kBytesPerMiB);
  EXPECT_EQ(a.stats().requested, 600 * kBytesPerMiB + 1);

  CachingAllocator::Config four;
  four.settings = parse_allocator_settings("roundup_power2_divisions:4");
  CachingAllocator b(four);
  EXPECT_EQ(b.round(1200), 1536u);             // not above 512 x 4: 512-byte rounding
  EXPECT_EQ(b.round(kBytesPerMiB + 1), kBytesPerMiB + kBytesPerMiB / 4);  // [1, 2) MiB in steps of 256 KiB
  EXPECT_EQ(b.round(5 * kBytesPerMiB + 1), 6 * kBytesPerMiB);    // [4, 8) MiB in steps of 1 MiB
}

TEST(CachingAllocator, MaxSplitSizeReleasesOnlyEnoughOversizeSegmentsBeforeEverything) {
  CachingAllocator::Config cfg;
  cfg.settings.max_split_size = 32 * kBytesPerMiB;
  cfg.device_capacity = 200 * kBytesPerMiB;
  CachingAllocator a(cfg);
  auto p = a.malloc(64 * kBytesPerMiB), q = a.malloc(40 * kBytesPerMiB), r = a.malloc(12 * kBytesPerMiB);
  a.free(p);
  a.free(q);
  a.free(r);  // cached whole: 64 and 40 MiB (oversize), 12 MiB
  EXPECT_EQ(a.stats().reserved, 116 * kBytesPerMiB);
  // 100 MiB: 116 + 100 > 200. No single oversize block covers 100 MiB, so the largest go first
  // (64, then 40: 104 >= 100); the 12 MiB segment stays, and it is no retry of the full release.
  a.malloc(100 * kBytesPerMiB);
  EXPECT_EQ(a.stats().reserved, 112 * kBytesPerMiB);
  EXPECT_EQ(a.stats().cuda_frees, 2u);
  EXPECT_EQ(a.stats().alloc_retries, 0u);
}

TEST(CachingAllocator, ExpandableSegmentsGrowOneSegmentInsteadOfCuttingNewOnes) {
  // The pattern expandable segments exist for: a batch one larger than the last. Each request
  // is 30 then 31 MiB; classic segments cannot reuse the freed 30 MiB ones for 31 MiB.
  auto run = [](bool expandable) {
    CachingAllocator::Config cfg;
    cfg.settings.expandable_segments = expandable;
    CachingAllocator a(cfg);
    auto x = a.malloc(30 * kBytesPerMiB), y = a.malloc(30 * kBytesPerMiB);
    a.free(x);
    a.free(y);
    a.malloc(31 * kBytesPerMiB);
    a.malloc(31 * kBytesPerMiB);
    return a.stats().reserved_peak;
  };
  // Classic: 30 + 30, then two new 32 MiB segments.
  EXPECT_EQ(run(false), 124 * kBytesPerMiB);
  // Expandable: 30 MiB maps two 20 MiB pages (30 | 10 free); the second 30 MiB takes the free 10
  // and one more page (60 MiB mapped); freed they merge into one 60 MiB block, the first 31 MiB
  // comes from it (29 left), the second takes those 29 and one more page: 80 MiB.
  EXPECT_EQ(run(true), 80 * kBytesPerMiB);
}

TEST(CachingAllocator, ExpandableSegmentsUnmapWholeFreePagesOnEmptyCache) {
  CachingAllocator::Config cfg;
  cfg.settings.expandable_segments = true;
  CachingAllocator a(cfg);
  auto x = a.malloc(31 * kBytesPerMiB);  // 40 MiB mapped: 31 | 9 free
  auto y = a.malloc(31 * kBytesPerMiB);  // the 9 free + 40 more: 80 MiB mapped, 31 | 31 | 18 free
  EXPECT_EQ(a.stats().reserved, 80 * kBytesPerMiB);
  EXPECT_EQ(a.stats().segments, 1u);
  a.free(y);  // 49 MiB free from 31 MiB on
  a.empty_cache();
  // Only the whole 20 MiB pages of the free block go: 40..80 MiB; 31..40 MiB stays mapped.
  EXPECT_EQ(a.stats().reserved, 40 * kBytesPerMiB);
  a.free(x);
  a.empty_cache();  // the whole segment is free: unmapped and released
  EXPECT_EQ(a.stats().reserved, 0u);
  EXPECT_EQ(a.stats().segments, 0u);
  EXPECT_EQ(a.stats().reserved_peak, 80 * kBytesPerMiB);
  // And it grows again from nothing.
  a.malloc(5 * kBytesPerMiB);
  EXPECT_EQ(a.stats().reserved, 20 * kBytesPerMiB);
}

TEST(CachingAllocator, ExpandableSegmentsMapWholePagesAgainstTheDevice) {
  // 50 MiB of device: 30 MiB maps 40; 15 MiB more needs one more 20 MiB page (60 > 50), and the
  // free 10 MiB holds no whole page to unmap: out of memory. Classic segments fit (30 + 16).
  CachingAllocator::Config cfg;
  cfg.device_capacity = 50 * kBytesPerMiB;
  cfg.settings.expandable_segments = true;
  CachingAllocator a(cfg);
  a.malloc(30 * kBytesPerMiB);
  EXPECT_THROW(a.malloc(15 * kBytesPerMiB), CachingAllocator::OutOfMemory);
  cfg.settings.expandable_segments = false;
  CachingAllocator b(cfg);
  b.malloc(30 * kBytesPerMiB);
  b.malloc(15 * kBytesPerMiB);
  EXPECT_EQ(b.stats().reserved, 46 * kBytesPerMiB);
}

TEST(CachingAllocator, ExpandableSegmentsKeepStreamsAndPoolsApart) {
  CachingAllocator::Config cfg;
  cfg.settings.expandable_segments = true;
  CachingAllocator a(cfg);
  a.malloc(100);              // small pool: one 2 MiB page
  a.malloc(100, /*stream=*/1);  // its own segment: another 2 MiB page
  a.malloc(5 * kBytesPerMiB);          // large pool: a 20 MiB page
  EXPECT_EQ(a.stats().reserved, 24 * kBytesPerMiB);
  EXPECT_EQ(a.stats().segments, 3u);
}

// Random sequences under every combination of settings: the accounting stays whole (nothing
// reserved is lost or counted twice) and freeing everything then emptying the cache returns to zero.
TEST(CachingAllocator, RandomSequencesKeepTheAccountingWhole) {
  for (const char* conf : {"", "expandable_segments:True", "max_split_size_mb:40", "roundup_power2_divisions:4",
                           "expandable_segments:True,roundup_power2_divisions:[1:2,>:8]"}) {
    for (std::uint64_t cap : {std::numeric_limits<std::uint64_t>::max(), 600 * kBytesPerMiB}) {
      CachingAllocator::Config cfg;
      cfg.settings = parse_allocator_settings(conf);
      cfg.device_capacity = cap;
      CachingAllocator a(cfg);
      std::uint64_t rng = 88172645463325252ull;
      auto next = [&] {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
      };
      std::vector<CachingAllocator::Handle> live;
      for (int i = 0; i < 4000; ++i) {
        const auto r = next();
        if (!live.empty() && r % 5 < 2) {
          const std::size_t k = next() % live.size();
          a.free(live[k]);
          live[k] = live.back();
          live.pop_back();
        } else if (r % 97 == 0) {
          a.empty_cache();
        } else {
          const std::uint64_t sizes[] = {100, 4096, 700 * 1024, 3 * kBytesPerMiB, 12 * kBytesPerMiB + 7, 45 * kBytesPerMiB, 130 * kBytesPerMiB};
          try {
            live.push_back(a.malloc(sizes[next() % 7] + next() % 5000, static_cast<int>(next() % 2)));
          } catch (const CachingAllocator::OutOfMemory&) {
          }
        }
        ASSERT_GE(a.stats().reserved, a.stats().allocated) << conf << " step " << i;
        ASSERT_LE(a.stats().reserved, cap) << conf << " step " << i;
        ASSERT_EQ(a.stats().reserved % (2 * kBytesPerMiB), 0u) << conf << " step " << i;
      }
      for (auto h : live) a.free(h);
      EXPECT_EQ(a.stats().allocated, 0u) << conf;
      a.empty_cache();
      EXPECT_EQ(a.stats().reserved, 0u) << conf;
      EXPECT_EQ(a.stats().segments, 0u) << conf;
    }
  }
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
