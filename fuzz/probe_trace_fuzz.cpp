// The probe's trace (src/estimate/trace/probe_trace.cpp) and its replay through the
// caching-allocator model: a trace is written by a user-controlled process (colod reads what the
// probe of a submitted job wrote), so any bytes must end in a UserError or a replay, never a crash.
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
  (void)colo::estimate::trace_uses_cudnn(t);
}

}  // namespace

COLO_FUZZ_TARGET(probe_trace) {
  COLO_FUZZ_EXPECT_USER_ERROR("probe_trace", parse_and_replay(data, size));
  return 0;
}
