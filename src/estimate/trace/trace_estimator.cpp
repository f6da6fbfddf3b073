// trace: the probe's record of the job's own training step, replayed through the caching-allocator
// model with cuDNN/cuBLAS workspaces; + the CUDA context = nvidia-smi's view.
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "core/error.h"
#include "estimate/estimator_impls.h"
#include "estimate/trace/trace_replay.h"

namespace colo::estimate {

namespace {

class TraceEstimator final : public Estimator {
 public:
  std::string name() const override { return "trace"; }
  Estimate estimate(const EstimateRequest& req) const override {
    if (!req.trace) throw UserError("trace needs a probe trace (--probe MODEL or --trace FILE)");
    const auto profile = load_profile(req.gpu);
    const bool cudnn = trace_uses_cudnn(*req.trace);
    const double context = profile.context_mib + (cudnn ? profile.cudnn_context_mib + profile.trace_cudnn_context_offset_mib
                                                        : profile.trace_context_offset_mib);
    const double margin = cudnn ? profile.trace_cudnn_safety_margin : profile.trace_safety_margin;
    auto opts = TraceReplayOptions::from_profile(profile);
    const double cap = static_cast<double>(profile.gpu_total_mib) - context;
    opts.capacity = cap > 0 ? bytes_of_mib(cap) : 0;
    opts.device_total = static_cast<std::uint64_t>(profile.gpu_total_mib) * kBytesPerMiB;
    const auto r = replay_probe_trace(*req.trace, opts);
    const bool own_cap = r.out_of_memory && r.fraction_limit > 0 && r.fraction_limit < opts.capacity;
    // Out of memory at the GPU's limit the replay stopped where it ran out: its peak so far is not
    // what the job needs (a larger batch ran out sooner and got a smaller figure). The same replay
    // without the limit, and without the script's memory fraction (a share of a larger GPU is
    // larger), gives the need itself: what a larger GPU would have to hold.
    std::optional<TraceReplay> need, unbounded_replay;
    if (r.out_of_memory && !own_cap) {
      auto unbounded = opts;
      unbounded.capacity = std::uint64_t{1} << 62;
      unbounded.device_total = 0;
      unbounded_replay = replay_probe_trace(*req.trace, unbounded);
      if (!unbounded_replay->out_of_memory) need = unbounded_replay;
    }
    // Without the need itself (the job's own memory fraction, or past 2^62 bytes), what a stopped
    // replay had reserved plus the request it refused is a lower bound of it: the estimate is made
    // from that bound, so a job that needs more never gets a smaller figure.
    const auto lower_bound = [](const TraceReplay& x) { return std::max(x.reserved_peak, x.oom_reserved + x.oom_request); };
    const double reserved = mib_of_bytes(need                ? need->reserved_peak
                                         : unbounded_replay  ? lower_bound(*unbounded_replay)
                                         : r.out_of_memory   ? lower_bound(r)
                                                             : r.reserved_peak);
    double total = reserved * (1.0 + margin) + context;
    if (r.out_of_memory) total = std::max(total, static_cast<double>(profile.gpu_total_mib) + 1);
    Estimate e;
    e.estimator = name();
    e.peak_mib = reserved;
    e.mib = static_cast<MiB>(std::ceil(total));
    if (own_cap) {
      e.explanation = fmt::format(
          "the replay ran out of memory at probe event {} of {}, {}: asking for {:.0f} MiB with {:.0f} MiB reserved "
          "of the {:.0f} MiB the script's torch.cuda.set_per_process_memory_fraction allows; the job would fail "
          "there on any GPU share",
          r.events, req.trace->records.size(), r.oom_at, mib_of_bytes(r.oom_request), mib_of_bytes(r.oom_reserved),
          mib_of_bytes(r.fraction_limit));
      return e;
    }
    if (r.out_of_memory) {
      e.explanation = fmt::format(
          "the replay ran out of memory at probe event {} of {}, {}: asking for {:.0f} MiB with {:.0f} MiB reserved "
          "of the {:.0f} MiB left beside the context ({:.0f} MiB, {}); does not fit the GPU{}",
          r.events, req.trace->records.size(), r.oom_at, mib_of_bytes(r.oom_request), mib_of_bytes(r.oom_reserved),
          mib_of_bytes(opts.capacity), context, profile.name,
          need ? fmt::format("; without the limit the replay peaks at {:.0f} MiB reserved, set by {} (x (1 + margin "
                             "{:.3f}) + context: {:.0f} MiB on a larger GPU)",
                             reserved, need->reserved_peak_at, margin, std::ceil(reserved * (1.0 + margin) + context))
               : std::string());
      return e;
    }
    e.explanation = fmt::format(
        "replayed {} probe events ({} steps, {} convs{}, {} matmuls{}): peak reserved {:.0f} MiB set by {} "
        "(allocated {:.0f}, live tensors {:.0f} MiB) x (1 + margin {:.3f}) + context {:.0f} MiB ({})",
        r.events, req.trace->steps, r.convs,
        opts.conv_table ? fmt::format(" ({} with workspaces measured on the GPU{})", r.convs_measured,
                                      !r.convs_from_neighbours ? std::string()
                                      : r.neighbour_runs == 1
                                          ? fmt::format(", {} from the nearest measured shapes", r.convs_from_neighbours)
                                          : fmt::format(", {} from the nearest measured shapes: the largest peak of {} "
                                                        "replays, run {}", r.convs_from_neighbours, r.neighbour_runs,
                                                        r.worst_run + 1))
                        : std::string(),
        r.matmuls,
        (r.empty_caches ? fmt::format(", {} empty_cache()", r.empty_caches) : std::string()) +
            (req.trace->allocator.is_default() ? std::string()
                                               : "; allocator settings " + req.trace->allocator.describe()),
        mib_of_bytes(r.reserved_peak), r.reserved_peak_at.empty() ? "nothing" : r.reserved_peak_at,
        mib_of_bytes(r.allocated_peak), mib_of_bytes(r.live_peak), margin, context, profile.name);
    return e;
  }
};

}  // namespace

std::unique_ptr<Estimator> make_trace_estimator() { return std::make_unique<TraceEstimator>(); }

}  // namespace colo::estimate
