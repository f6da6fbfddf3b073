// The probe trace reader (format v1), its replay through the caching-allocator model, and the
// trace/faketensor estimators, on hand-written traces whose answers follow from the allocator rules.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "estimate/estimator.h"
#include "estimate/trace/probe_trace.h"
#include "estimate/trace/trace_replay.h"
#include "core/units.h"

namespace colo::estimate {
namespace {


std::string probe_trace_text(const std::string& body) {
  return "colo-probe-trace 1\nH {\"model\":\"t\",\"batch\":4}\n" + body + "S 1\nE {}\n";
}

std::string trace_error(const std::string& text) {
  try {
    parse_probe_trace(text, "t.trace");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(ProbeTrace, ParsesRecordsAndInternsOperators) {
  const auto t = parse_probe_trace(probe_trace_text("M 1 4096 0 load param\nM 7 100 0 forward addmm\nB forward addmm\n"
                                         "C backward convolution_backward 10 20 1\nF 7\n"),
                                   "t.trace");
  ASSERT_EQ(t.records.size(), 6u);
  EXPECT_EQ(t.storages, 2u);
  EXPECT_EQ(t.steps, 1);
  EXPECT_EQ(t.header["batch"], 4);
  EXPECT_EQ(t.ops[t.records[1].op], "addmm");
  EXPECT_EQ(t.records[2].op, t.records[1].op);
  EXPECT_EQ(t.records[4].kind, TraceRecord::Kind::Free);
  EXPECT_EQ(t.records[4].slot, 1u);
  EXPECT_TRUE(t.records[3].strided);
  EXPECT_EQ(t.records[3].out_bytes, 20u);
}

TEST(ProbeTrace, RefusesMalformedTracesNamingTheLine) {
  EXPECT_EQ(trace_error("nope\n"), "t.trace:1: not a colo probe trace (first line must be 'colo-probe-trace 1' or '2')");
  EXPECT_EQ(trace_error("colo-probe-trace 3\n"), "t.trace:1: unsupported trace version (this colo reads versions 1 and 2)");
  EXPECT_EQ(trace_error("colo-probe-trace 1\nM 1 2 0 load x\n"), "t.trace:2: record before the header (H)");
  EXPECT_EQ(trace_error(probe_trace_text("F 3\n")), "t.trace:3: free of storage 3 that was never allocated");
  EXPECT_EQ(trace_error(probe_trace_text("M 3 1 0 load p\nF 3\nF 3\n")), "t.trace:5: storage 3 freed twice");
  EXPECT_EQ(trace_error(probe_trace_text("M 3 1 0 load p\nM 3 1 0 load p\n")), "t.trace:4: storage 3 allocated twice");
  EXPECT_EQ(trace_error(probe_trace_text("M 3 1 0 lunch p\n")), "t.trace:3: unknown phase 'lunch' (load, forward, backward, optimizer)");
  EXPECT_NE(trace_error(probe_trace_text("M 3 -1 0 load p\n")).find("t.trace:3: bytes"), std::string::npos);
  EXPECT_NE(trace_error(probe_trace_text("M 3 1125899906842625 0 load p\n")).find("t.trace:3: bytes"), std::string::npos);
  EXPECT_NE(trace_error(probe_trace_text("M 3 99999999999999999999 0 load p\n")).find("t.trace:3: bytes"), std::string::npos);
  EXPECT_EQ(trace_error(probe_trace_text("M 3 1 0 load\n")), "t.trace:3: M record: expected 'M id bytes stream phase op'");
  EXPECT_EQ(trace_error(probe_trace_text("M 3 1 0 load a$b\n")), "t.trace:3: bad operator name 'a$b'");
  EXPECT_EQ(trace_error(probe_trace_text("X forward\n")), "t.trace:3: unknown record 'X' (empty_cache records are format version 2)");
  EXPECT_EQ(trace_error(probe_trace_text("L 0.5\n")), "t.trace:3: unknown record 'L' (memory-fraction records are format version 2)");
  EXPECT_EQ(trace_error(probe_trace_text("Q 1\n")), "t.trace:3: unknown record 'Q'");
  EXPECT_EQ(trace_error(probe_trace_text("S 2\n")), "t.trace:3: step 2 out of order");
  EXPECT_EQ(trace_error("colo-probe-trace 1\nH [1]\n"), "t.trace:2: H record must be a JSON object");
  EXPECT_EQ(trace_error("colo-probe-trace 1\nH {\n"), "t.trace:2: H record is not valid JSON");
  EXPECT_EQ(trace_error("colo-probe-trace 1\nH {}\nS 1\n"), "t.trace: trace is truncated (no footer E record)");
  EXPECT_EQ(trace_error("colo-probe-trace 1\nH {}\nE {}\n"), "t.trace: trace records no optimizer step");
  EXPECT_EQ(trace_error(probe_trace_text("") + "M 9 1 0 load p\n"), "t.trace:5: record after the footer (E)");
  EXPECT_EQ(trace_error(""), "t.trace: empty trace");
  // The header fields colo reads back have their types.
  EXPECT_EQ(trace_error("colo-probe-trace 1\nH {\"batch\": \"eight\"}\nS 1\nE {}\n"),
            "t.trace:2: header field 'batch': expected a whole number in 0..2^40");
  EXPECT_EQ(trace_error("colo-probe-trace 1\nH {\"batch\": 8.5}\nS 1\nE {}\n"),
            "t.trace:2: header field 'batch': expected a whole number in 0..2^40");
  EXPECT_EQ(trace_error("colo-probe-trace 1\nH {\"batch\": 99999999999999999999999}\nS 1\nE {}\n"),
            "t.trace:2: header field 'batch': expected a whole number in 0..2^40");
  EXPECT_EQ(trace_error("colo-probe-trace 1\nH {\"model\": 5}\nS 1\nE {}\n"), "t.trace:2: header field 'model': expected a string");
  // A stated batch is a real one (a script's probe leaves it out).
  EXPECT_EQ(trace_error("colo-probe-trace 1\nH {\"batch\": 0}\nS 1\nE {}\n"),
            "t.trace:2: header field 'batch': batch size 0 is out of range (expected 1..1048576)");
  EXPECT_EQ(trace_error("colo-probe-trace 1\nH {\"batch\": 1048577}\nS 1\nE {}\n"),
            "t.trace:2: header field 'batch': batch size 1048577 is out of range (expected 1..1048576)");
  // A field given twice: nlohmann keeps the last, which silently won over the first.
  EXPECT_EQ(trace_error("colo-probe-trace 1\nH {\"batch\": 8, \"batch\": 64}\nS 1\nE {}\n"),
            "t.trace:2: H record: field 'batch' given twice");
  EXPECT_EQ(trace_error("colo-probe-trace 1\nH {}\nS 1\nE {\"a\": {\"x\": 1, \"x\": 2}}\n"),
            "t.trace:4: E record: field 'x' given twice");
  EXPECT_EQ(trace_error("colo-probe-trace 1\nH {\"a\": {\"x\": 1}, \"b\": {\"x\": 2}}\nS 1\nE {}\n"),
            "");  // the same key in two objects is no repeat
}

TEST(TraceReplay, FollowsTheAllocatorRules) {
  // Two 30 MiB tensors: two segments of 30 MiB (>= 10 MiB: rounded to 2 MiB). The second is freed
  // and a 25 MiB request reuses its cached block (split: the 5 MiB rest stays in the segment).
  const auto t = parse_probe_trace(probe_trace_text("M 1 31457280 0 load param\nM 2 31457280 0 forward relu\nF 2\n"
                                         "M 3 26214400 0 backward relu_backward\n"),
                                   "t.trace");
  const auto r = replay_probe_trace(t, {});
  EXPECT_EQ(r.reserved_peak, 60 * kBytesPerMiB);
  EXPECT_EQ(r.live_peak, 60 * kBytesPerMiB);
  EXPECT_EQ(r.reserved_peak_at, "forward relu (step 1)");
  EXPECT_FALSE(r.out_of_memory);
}

TEST(TraceReplay, AddsConvolutionAndCublasWorkspaces) {
  const auto t = parse_probe_trace(probe_trace_text("M 1 1048576 0 load param\nC forward convolution 4194304 8388608 0\n"
                                         "C forward convolution 4194304 2097152 1\nB forward addmm\nB forward mm\n"),
                                   "t.trace");
  TraceReplayOptions o;
  o.conv_workspace_ratio = 1.0;
  o.strided_conv_workspace_ratio = 4.0;
  o.cublas_workspace = 8 * kBytesPerMiB;
  const auto r = replay_probe_trace(t, o);
  // param: a 2 MiB small segment; conv 1: 8 MiB transient (20 MiB segment, cached); conv 2: 16 MiB
  // does not fit the cached 20 MiB? It does: best fit reuses it. cuBLAS 8 MiB: splits the cached 20.
  EXPECT_EQ(r.convs, 2u);
  EXPECT_EQ(r.matmuls, 2u);
  EXPECT_EQ(r.reserved_peak, 22 * kBytesPerMiB);
  const auto bare = replay_probe_trace(t, {});
  EXPECT_EQ(bare.reserved_peak, 2 * kBytesPerMiB);
  EXPECT_EQ(bare.live_peak, kBytesPerMiB);
}

std::string trace2(const std::string& body) {
  return "colo-probe-trace 2\nH {\"model\":\"t\",\"batch\":4}\n" + body + "S 1\nE {}\n";
}

// Format version 2: what a script does to the caching allocator itself. Each answer follows from
// PyTorch's rules (c10/cuda/CUDACachingAllocator.cpp: emptyCache → release_cached_blocks; a set
// fraction fails cudaMalloc past fraction × total memory, then frees the cache and retries).
TEST(TraceReplay, EmptyCacheReleasesTheCachedSegments) {
  const std::string body = "M 1 31457280 0 forward relu\nF 1\n";
  const std::string after = "M 2 41943040 0 forward relu\n";
  const auto kept = replay_probe_trace(parse_probe_trace(trace2(body + after), "t.trace"), {});
  EXPECT_EQ(kept.reserved_peak, 70 * kBytesPerMiB);  // 30 MiB cached + a new 40 MiB segment
  const auto t = parse_probe_trace(trace2(body + "X forward\n" + after), "t.trace");
  EXPECT_EQ(t.records[2].kind, TraceRecord::Kind::EmptyCache);
  const auto released = replay_probe_trace(t, {});
  EXPECT_EQ(released.reserved_peak, 40 * kBytesPerMiB);
  EXPECT_EQ(released.empty_caches, 1u);
}

TEST(TraceReplay, AMemoryFractionCapsWhatIsReserved) {
  TraceReplayOptions o;
  o.device_total = 1024 * kBytesPerMiB;  // fraction 0.1 → 102.4 MiB
  const std::string body = "L 0.1\nM 1 62914560 0 forward relu\nF 1\nM 2 73400320 0 forward relu\n";
  const auto t = parse_probe_trace(trace2(body), "t.trace");
  EXPECT_DOUBLE_EQ(t.records[0].fraction, 0.1);
  const auto r = replay_probe_trace(t, o);
  EXPECT_FALSE(r.out_of_memory);
  EXPECT_EQ(r.reserved_peak, 70 * kBytesPerMiB);  // the cached 60 MiB is released to make room
  EXPECT_EQ(r.fraction_limit, static_cast<std::uint64_t>(0.1 * 1024 * kBytesPerMiB));
  EXPECT_EQ(replay_probe_trace(parse_probe_trace(trace2(body.substr(6)), "t.trace"), o).reserved_peak, 130 * kBytesPerMiB);
  // Beyond the fraction: out of memory, as the job would be.
  const auto over = replay_probe_trace(parse_probe_trace(trace2("L 0.1\nM 1 115343360 0 forward relu\n"), "t.trace"), o);
  EXPECT_TRUE(over.out_of_memory);
  EXPECT_NE(trace_error(trace2("L 1.5\n")).find("t.trace:3: memory fraction"), std::string::npos);
  EXPECT_NE(trace_error(trace2("L nan\n")).find("t.trace:3: memory fraction"), std::string::npos);
}

// Each stream has its own pool: a block freed on a side stream is not reused on the default one.
TEST(TraceReplay, StreamsKeepTheirOwnPools) {
  const auto one = replay_probe_trace(
      parse_probe_trace(probe_trace_text("M 1 155189248 0 forward x\nF 1\nM 2 155189248 0 forward y\n"), "t.trace"), {});
  EXPECT_EQ(one.reserved_peak, 148 * kBytesPerMiB);
  const auto two = replay_probe_trace(
      parse_probe_trace(probe_trace_text("M 1 155189248 1 forward x\nF 1\nM 2 155189248 0 forward y\n"), "t.trace"), {});
  EXPECT_EQ(two.reserved_peak, 296 * kBytesPerMiB);
}

// An empty storage takes no block (PyTorch calls the allocator only for size != 0).
TEST(TraceReplay, EmptyStoragesTakeNoMemory) {
  const auto r = replay_probe_trace(
      parse_probe_trace(probe_trace_text("M 1 1048576 0 load p\nM 2 1048576 0 load q\nM 3 0 0 forward e\nF 3\n"), "t.trace"), {});
  EXPECT_EQ(r.reserved_peak, 2 * kBytesPerMiB);
}

TEST(TraceReplay, ReportsOutOfMemoryAtTheCapacity) {
  const auto t = parse_probe_trace(probe_trace_text("M 1 104857600 0 load param\n"), "t.trace");
  TraceReplayOptions o;
  o.capacity = 50 * kBytesPerMiB;
  EXPECT_TRUE(replay_probe_trace(t, o).out_of_memory);
}

TEST(TraceEstimators, BeyondTheGpuTheEstimateIsTheJobsNeedNotWhereTheReplayStopped) {
  // 30 + 30 GiB run out on a 40 GB GPU at the second request; the job goes on to take 10 GiB more.
  const auto t = parse_probe_trace(
      probe_trace_text("M 1 32212254720 0 load a\nM 2 32212254720 0 forward b\nM 3 10737418240 0 backward c\n"), "t.trace");
  EstimateRequest req;
  req.gpu = "a100-40gb";
  req.trace = &t;
  const auto e = make_estimator("trace")->estimate(req);
  EXPECT_DOUBLE_EQ(e.peak_mib, 70.0 * 1024);
  EXPECT_GT(e.mib, 70 * 1024 + 1000);  // + margin and context
  EXPECT_NE(e.explanation.find("does not fit the GPU; without the limit the replay peaks at 71680 MiB reserved, "
                               "set by backward c (step 1)"),
            std::string::npos)
      << e.explanation;
  // A job that needs more gets a larger figure, though its replay runs out sooner.
  const auto bigger = parse_probe_trace(
      probe_trace_text("M 1 42949672960 0 load a\nM 2 42949672960 0 forward b\n"), "t.trace");
  req.trace = &bigger;
  const auto b = make_estimator("trace")->estimate(req);
  EXPECT_DOUBLE_EQ(b.peak_mib, 80.0 * 1024);
  EXPECT_GT(b.mib, e.mib);
}

TEST(TraceEstimators, TraceAddsContextFaketensorDoesNot) {
  const auto t = parse_probe_trace(probe_trace_text("M 1 31457280 0 load param\nM 2 31457280 0 forward convolution\n"), "t.trace");
  EstimateRequest req;
  req.gpu = "a100-40gb";
  req.batch = 4;
  req.trace = &t;
  const auto fake = make_estimator("faketensor")->estimate(req);
  EXPECT_EQ(fake.mib, 60);
  EXPECT_EQ(fake.estimator, "faketensor");
  const auto tr = make_estimator("trace")->estimate(req);
  EXPECT_GT(tr.mib, 60 + 1000);  // + the CUDA context (and cuDNN's: the trace has a convolution)
  EXPECT_DOUBLE_EQ(tr.peak_mib, 60.0);
  EXPECT_NE(tr.explanation.find("set by forward convolution (step 1)"), std::string::npos) << tr.explanation;
  const auto a = make_estimator("auto")->estimate(req);
  EXPECT_EQ(a.mib, tr.mib);
  EXPECT_EQ(a.estimator, "auto(trace)");
  EstimateRequest none;
  none.batch = 4;
  EXPECT_THROW(make_estimator("trace")->estimate(none), UserError);
  EXPECT_THROW(make_estimator("faketensor")->estimate(none), UserError);
}

}  // namespace
}  // namespace colo::estimate

namespace colo::estimate {
namespace {

std::string trace_with_conf(const std::string& conf, const std::string& body) {
  return "colo-probe-trace 1\nH {\"model\":\"t\",\"batch\":4,\"alloc_conf\":\"" + conf + "\"}\n" + body + "S 1\nE {}\n";
}

// The job's PYTORCH_CUDA_ALLOC_CONF (the header's alloc_conf) is what the replay's allocator runs with.
TEST(TraceReplay, FollowsTheJobsAllocatorSettings) {
  // 30 MiB twice, freed, then 31 MiB twice: the pattern expandable segments exist for.
  const std::string body =
      "M 1 31457280 0 forward a\nM 2 31457280 0 forward a\nF 1\nF 2\nM 3 32505856 0 forward b\nM 4 32505856 0 forward b\n";
  EXPECT_EQ(replay_probe_trace(parse_probe_trace(probe_trace_text(body), "t.trace"), {}).reserved_peak, 124 * kBytesPerMiB);
  const auto t = parse_probe_trace(trace_with_conf("expandable_segments:True", body), "t.trace");
  EXPECT_TRUE(t.allocator.expandable_segments);
  EXPECT_EQ(replay_probe_trace(t, {}).reserved_peak, 80 * kBytesPerMiB);
  EXPECT_EQ(replay_probe_trace(parse_probe_trace(trace_with_conf("", body), "t.trace"), {}).reserved_peak, 124 * kBytesPerMiB);
}

TEST(TraceReplay, AllocatorSettingsItCannotFollowAreErrorsNotGuesses) {
  EXPECT_EQ(trace_error(trace_with_conf("expandable_segments:yes", "")),
            "t.trace:2: header field 'alloc_conf': allocator settings 'expandable_segments:yes': expandable_segments "
            "'yes': expected True or False");
  EXPECT_EQ(trace_error(trace_with_conf("backend:cudaMallocAsync", "")).substr(0, 42),
            "t.trace:2: header field 'alloc_conf': allo");
  EXPECT_EQ(trace_error("colo-probe-trace 1\nH {\"model\":\"t\",\"alloc_conf\":1}\nS 1\nE {}\n"),
            "t.trace:2: header field 'alloc_conf': expected a string");
  // The garbage collector acts only under a memory fraction; that pair is refused, each alone is fine.
  TraceReplayOptions o;
  o.device_total = 1024 * kBytesPerMiB;
  const std::string gc = "garbage_collection_threshold:0.5";
  EXPECT_NO_THROW(replay_probe_trace(parse_probe_trace(trace_with_conf(gc, "M 1 100 0 forward a\n"), "t.trace"), o));
  const auto both = parse_probe_trace(
      "colo-probe-trace 2\nH {\"model\":\"t\",\"alloc_conf\":\"" + gc + "\"}\nL 0.5\nM 1 100 0 forward a\nS 1\nE {}\n",
      "t.trace");
  try {
    replay_probe_trace(both, o);
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "t.trace: PYTORCH_CUDA_ALLOC_CONF garbage_collection_threshold with set_per_process_memory_fraction is "
                 "not modelled (colo models the caching allocator without its garbage collector)");
  }
}

}  // namespace
}  // namespace colo::estimate
