// The probe's trace (src/estimate/trace/probe_trace.cpp) and its replay through the
// caching-allocator model: a trace is written by a user-controlled process (colod reads what the
// probe of a submitted job wrote), so any bytes must end in a UserError or a replay, never a crash.
// Each trace is replayed twice: with the ratio model, and with a measured workspace table whose
// keys the dictionary and the seed corpus carry (its steps run between the trace's own records).
#include "estimate/trace/conv/conv_workspace_table.h"
#include "estimate/trace/probe_trace.h"
#include "estimate/trace/trace_replay.h"
#include "fuzz_common.h"

namespace {

void parse_and_replay(const std::uint8_t* data, std::size_t size) {
  const auto t = colo::estimate::parse_probe_trace(colo::fuzz::as_text(data, size), "fuzz.trace");
  colo::estimate::TraceReplayOptions o;
  o.capacity = std::uint64_t{40} << 30;  // an A100's memory: an OOM is an answer, not a crash
  o.cublas_workspace = std::uint64_t{8} << 20;
  o.conv_workspace_ratio = 0.5;
  o.strided_conv_workspace_ratio = 4;
  (void)colo::estimate::replay_probe_trace(t, o);
  static const auto table = std::make_shared<const colo::estimate::ConvWorkspaceTable>(
      colo::estimate::ConvWorkspaceTable::parse("colo-conv-workspace 1\nH {}\n"
                                                "f:1x1x1x1:1x1x1x1:s1x1:p0x0:d1x1:g1:t0:float32:b0\to +1048576 -0\n"
                                                "b:1x1x1x1:1x1x1x1:s1x1:p0x0:d1x1:g1:t0:float32:m111\t"
                                                "o +33554432 -0 o +2097152 o +5 -2 -1\n",
                                                "fuzz.tsv"));
  o.conv_table = table;
  (void)colo::estimate::replay_probe_trace(t, o);
  (void)colo::estimate::trace_uses_cudnn(t);
}

}  // namespace

COLO_FUZZ_TARGET(probe_trace) {
  COLO_FUZZ_EXPECT_USER_ERROR("probe_trace", parse_and_replay(data, size));
  return 0;
}
