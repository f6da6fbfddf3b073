#include "estimate/allocator/allocsim.h"

#include <cmath>
#include <fmt/format.h>

#include "core/error.h"
#include "estimate/estimator.h"
#include "estimate/estimator_impls.h"

namespace colo::estimate {

ReplayResult replay(const std::vector<AllocEvent>& trace, std::uint64_t capacity, const AllocatorSettings& settings) {
  CachingAllocator::Config cfg;
  cfg.device_capacity = capacity;
  cfg.settings = settings;
  CachingAllocator a(cfg);
  std::vector<CachingAllocator::Handle> handles;
  handles.reserve(trace.size() / 2 + 1);
  ReplayResult r;
  try {
    for (const auto& e : trace) {
      if (e.op == AllocEvent::Op::Malloc) {
        if (e.id >= handles.size()) handles.resize(e.id + 1);
        handles[e.id] = a.malloc(e.bytes);
      } else {
        a.free(handles[e.id]);
      }
      ++r.events;
    }
  } catch (const CachingAllocator::OutOfMemory&) {
    r.out_of_memory = true;
  }
  r.reserved_peak = a.stats().reserved_peak;
  r.allocated_peak = a.stats().allocated_peak;
  return r;
}

AllocSimBreakdown simulate_allocsim(const ModelGraph& g, std::int64_t batch, Optimizer opt,
                                    const CalibrationProfile& profile, const AllocatorSettings& settings) {
  TraceOptions to;
  to.batch = batch;
  to.optimizer = opt;
  to.cublas_workspace = bytes_of_mib(profile.cublas_workspace_mib);
  to.conv_workspace = bytes_of_mib(profile.conv_workspace_mib);
  to.conv_workspace_ratio = profile.conv_workspace_ratio;
  to.strided_conv_workspace_ratio = profile.strided_conv_workspace_ratio;
  const auto trace = synthesize_training_trace(g, to);
  AllocSimBreakdown b;
  const bool cudnn = g.count(LayerKind::Conv) + g.count(LayerKind::ConvTranspose) + g.count(LayerKind::BatchNorm) > 0;
  b.context_mib = profile.context_mib + (cudnn ? profile.cudnn_context_mib : 0.0);
  b.margin = cudnn ? profile.cudnn_safety_margin : profile.safety_margin;
  const double cap_mib = static_cast<double>(profile.gpu_total_mib) - b.context_mib;
  b.replay = replay(trace, cap_mib > 0 ? bytes_of_mib(cap_mib) : 0, settings);
  if (b.replay.out_of_memory) {
    // The GPU's limit stopped the replay where it ran out, whose peak so far is not what the job
    // needs (a larger batch ran out sooner and got a smaller figure). The same replay without the
    // limit gives the need itself, beyond this GPU: what a larger GPU would have to hold.
    const ReplayResult need = replay(trace, std::uint64_t{1} << 62, settings);
    b.replay.reserved_peak = need.reserved_peak;
    b.replay.allocated_peak = need.allocated_peak;
    b.replay.events = need.events;
  }
  b.total_mib = mib_of_bytes(b.replay.reserved_peak) * (1.0 + b.margin) + b.context_mib;
  if (b.replay.out_of_memory) b.total_mib = std::max<double>(b.total_mib, static_cast<double>(profile.gpu_total_mib) + 1);
  return b;
}

namespace {

class AllocSimEstimator final : public Estimator {
 public:
  std::string name() const override { return "allocsim"; }
  Estimate estimate(const EstimateRequest& req) const override {
    if (!req.graph) throw UserError("allocsim needs a model summary");
    if (req.batch <= 0) throw UserError("allocsim needs a batch size > 0");
    const auto unknown = req.graph->unknown_types();
    const auto profile = load_profile(req.gpu);
    const AllocatorSettings settings = req.allocator ? *req.allocator : AllocatorSettings{};
    const auto b = simulate_allocsim(*req.graph, req.batch, req.optimizer, profile, settings);
    Estimate e;
    e.estimator = name();
    e.mib = static_cast<MiB>(std::ceil(b.total_mib));
    e.explanation = fmt::format(
        "replayed {} allocator events: peak reserved {:.0f} MiB (allocated {:.0f} MiB) x (1 + margin {:.3f}) + context {:.0f} MiB ({}){}{}",
        b.replay.events, mib_of_bytes(b.replay.reserved_peak), mib_of_bytes(b.replay.allocated_peak),
        b.margin, b.context_mib, profile.name,
        (settings.is_default() ? std::string() : "; allocator settings " + settings.describe()) +
            (b.replay.out_of_memory ? "; does not fit the GPU" : ""),
        unknown.empty() ? "" : fmt::format("; {} unknown layer type(s) ignored: {}", unknown.size(),
                                           fmt::join(unknown, ",")));
    return e;
  }
};

}  // namespace

std::unique_ptr<Estimator> make_allocsim_estimator() { return std::make_unique<AllocSimEstimator>(); }

}  // namespace colo::estimate
