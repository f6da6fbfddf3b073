#include "estimate/allocator/training_trace.h"

#include <algorithm>
#include <unordered_map>

namespace colo::estimate {

namespace {

// Emits events and reference-counts tensors: a tensor is freed when its last holder lets go.
class Tracer {
 public:
  explicit Tracer(std::vector<AllocEvent>& out) : out_(out) {}
  std::uint32_t alloc(std::uint64_t bytes, int refs = 1) {
    const std::uint32_t id = next_++;
    out_.push_back({AllocEvent::Op::Malloc, id, std::max<std::uint64_t>(bytes, 1)});
    refs_[id] = refs;
    return id;
  }
  void hold(std::uint32_t id) { ++refs_[id]; }
  bool alive(std::uint32_t id) const { return refs_.count(id) > 0; }
  void release(std::uint32_t id) {
    auto it = refs_.find(id);
    if (it == refs_.end()) return;
    if (--it->second <= 0) {
      out_.push_back({AllocEvent::Op::Free, id, 0});
      refs_.erase(it);
    }
  }
  void transient(std::uint64_t bytes) {
    if (bytes == 0) return;
    release(alloc(bytes));
  }

 private:
  std::vector<AllocEvent>& out_;
  std::unordered_map<std::uint32_t, int> refs_;
  std::uint32_t next_ = 0;
};

bool is_view(LayerKind k) { return k == LayerKind::Flatten || k == LayerKind::Identity; }

// Parameter tensors of a layer, as separate allocations (weight, bias, BN running stats, ...).
std::vector<std::uint64_t> param_tensors(const Layer& l, std::int64_t dtype) {
  std::vector<std::uint64_t> t;
  if (l.params <= 0) return t;
  const std::uint64_t p = static_cast<std::uint64_t>(l.params);
  switch (l.kind) {
    case LayerKind::BatchNorm:
    case LayerKind::LayerNorm:
    case LayerKind::GroupNorm:
      t = {p / 2 * dtype, (p - p / 2) * dtype};
      break;
    case LayerKind::Conv:
    case LayerKind::ConvTranspose:
    case LayerKind::Linear: {
      // weight and bias; when the shapes are unknown, a linear layer is assumed to have a bias
      // (one per output feature) and a conv none (it is usually followed by a batch norm).
      std::uint64_t w = p;
      if (l.in_features > 0 && l.out_features > 0) {
        const std::uint64_t k = l.kernel > 0 ? static_cast<std::uint64_t>(l.kernel * l.kernel) : 1;
        w = static_cast<std::uint64_t>(l.in_features * l.out_features) * k;
      } else if (l.kind == LayerKind::Linear && !l.out_shape.empty()) {
        w = p - std::min<std::uint64_t>(p, static_cast<std::uint64_t>(l.out_shape.back()));
      }
      if (w > 0 && w < p) t = {w * dtype, (p - w) * dtype};
      else t = {p * dtype};
      break;
    }
    default:
      t = {p * dtype};
  }
  return t;
}

}  // namespace

std::vector<AllocEvent> synthesize_training_trace(const ModelGraph& g, const TraceOptions& opt) {
  std::vector<AllocEvent> ev;
  ev.reserve(g.layers.size() * 16 * static_cast<std::size_t>(opt.iterations) + 64);
  Tracer tr(ev);
  const std::uint64_t B = static_cast<std::uint64_t>(std::max<std::int64_t>(opt.batch, 1));
  const std::uint64_t dt = static_cast<std::uint64_t>(g.dtype_bytes);

  // model.to("cuda"): parameters and buffers, in module order. They are never freed.
  std::vector<std::vector<std::uint64_t>> params(g.layers.size());
  for (std::size_t i = 0; i < g.layers.size(); ++i) {
    params[i] = param_tensors(g.layers[i], g.dtype_bytes);
    for (auto b : params[i]) tr.alloc(b);
    if (g.layers[i].kind == LayerKind::BatchNorm) {  // running_mean, running_var, num_batches_tracked
      const std::uint64_t c = static_cast<std::uint64_t>(g.layers[i].params / 2);
      tr.alloc(c * dt);
      tr.alloc(c * dt);
      tr.alloc(8);
    }
  }
  // How many Add/Concat layers read each producer's output besides the previous tensor.
  std::unordered_map<int, int> extra_readers;
  for (const auto& l : g.layers)
    for (int p : l.extra_inputs) ++extra_readers[p];
  std::vector<std::uint64_t> all_params;
  for (const auto& v : params) all_params.insert(all_params.end(), v.begin(), v.end());

  std::int64_t input_elems = 1;
  for (auto d : g.input_shape) input_elems *= d;
  const bool sequence = g.seq_len > 0;
  bool cublas_ready = false;
  bool state_ready = false;
  const int n_state = state_tensors_per_param(opt.optimizer);
  const int n_temp = step_temporaries_per_param(opt.optimizer);
  auto conv_ws = [&](const Layer& l, std::int64_t in_e, std::int64_t out_e) {
    const double larger = static_cast<double>(B * static_cast<std::uint64_t>(std::max(in_e, out_e)) * dt);
    const double ratio = l.strided ? opt.strided_conv_workspace_ratio : opt.conv_workspace_ratio;
    // capped at 2^62 bytes (no GPU holds that: the replay reports out of memory) so the cast cannot wrap
    const double ws = std::min(static_cast<double>(opt.conv_workspace) + ratio * larger, 0x1p62);
    return static_cast<std::uint64_t>(ws);
  };

  for (int iter = 0; iter < opt.iterations; ++iter) {
    // The batch: images (fp32) or token ids/mask/labels (int64) and labels.
    std::vector<std::uint32_t> batch_tensors;
    std::uint32_t cur;
    std::int64_t cur_elems;
    if (sequence) {
      cur = tr.alloc(B * static_cast<std::uint64_t>(g.seq_len) * 8);
      batch_tensors.push_back(tr.alloc(B * static_cast<std::uint64_t>(g.seq_len) * 8));  // attention mask
      batch_tensors.push_back(tr.alloc(B * static_cast<std::uint64_t>(g.seq_len) * 8));  // labels
      cur_elems = -1;  // ids are not the first layer's float input
    } else {
      cur = tr.alloc(B * static_cast<std::uint64_t>(input_elems) * dt);
      batch_tensors.push_back(tr.alloc(B * 8));  // labels
      cur_elems = input_elems;
    }
    batch_tensors.push_back(cur);
    tr.hold(cur);  // the batch stays referenced by the training loop until the iteration ends

    // ---- forward ----
    struct Saved {
      std::vector<std::uint32_t> tensors;  // released at this layer's backward
      std::int64_t input_elems = 0;
      bool grad_input = true;
      bool has_params = false;
      bool conv = false;
      int input_producer = 0;  // layer (or kInputTensor) whose output this layer read
    };
    std::vector<Saved> saved(g.layers.size());
    constexpr std::uint32_t kNone = ~std::uint32_t{0};
    std::vector<std::uint32_t> output_of(g.layers.size(), kNone);  // tensor id each layer produced
    const std::uint32_t model_input = cur;
    // A tensor an Add/Concat reads later stays alive until then: one reference per later reader.
    auto keep_for_readers = [&](int producer, std::uint32_t t) {
      const auto readers = extra_readers.find(producer);
      if (readers != extra_readers.end())
        for (int k = 0; k < readers->second; ++k) tr.hold(t);
    };
    keep_for_readers(Layer::kInputTensor, model_input);
    // The tensor a producer index names (kInputTensor: the batch; a layer not run yet: none).
    auto tensor_of = [&](int producer, std::size_t now) {
      if (producer == Layer::kInputTensor) return model_input;
      return producer >= 0 && static_cast<std::size_t>(producer) < now ? output_of[static_cast<std::size_t>(producer)] : kNone;
    };
    bool first_compute = true;
    for (std::size_t i = 0; i < g.layers.size(); ++i) {
      const Layer& l = g.layers[i];
      Saved& s = saved[i];
      const std::int64_t out_elems = l.out_elems();
      if (is_view(l.kind) || l.kind == LayerKind::Unknown) {
        output_of[i] = cur;
        keep_for_readers(static_cast<int>(i), cur);
        continue;
      }
      if (l.kind == LayerKind::Add || l.kind == LayerKind::Concat) {
        // x + shortcut / torch.cat(features): a new tensor; the inputs' extra references end here.
        const std::uint32_t out = tr.alloc(B * static_cast<std::uint64_t>(out_elems) * dt);
        tr.release(cur);
        for (int p : l.extra_inputs)
          if (const std::uint32_t src = tensor_of(p, i); src != kNone) tr.release(src);
        cur = out;
        cur_elems = out_elems;
        output_of[i] = out;
        keep_for_readers(static_cast<int>(i), out);
        continue;
      }
      if (l.kind == LayerKind::Container) {
        // A composite whose output differs from its last child's is a new tensor (cat, x*scale).
        if (out_elems != cur_elems) {
          const std::uint32_t out = tr.alloc(B * static_cast<std::uint64_t>(out_elems) * dt);
          tr.release(cur);
          cur = out;
          cur_elems = out_elems;
        }
        output_of[i] = cur;
        keep_for_readers(static_cast<int>(i), cur);
        continue;
      }
      s.has_params = l.params > 0;
      s.conv = l.kind == LayerKind::Conv || l.kind == LayerKind::ConvTranspose;
      s.grad_input = !first_compute;
      first_compute = false;
      // An input wider than the current tensor is produced by an op the source does not list
      // (a concatenation): materialise it.
      std::uint32_t in = cur;
      std::int64_t in_elems = cur_elems;
      s.input_producer = static_cast<int>(i) - 1;
      // A residual block's conv reads the block input: the same tensor while something (the
      // shortcut conv's saved input) still holds it.
      if (l.input_elems > 0 && cur_elems > 0 && l.input_elems != cur_elems && !sequence) {
        const std::uint32_t src = tensor_of(l.input_from, i);
        if (src != kNone && tr.alive(src)) {
          in = src;
          tr.hold(in);
          s.input_producer = l.input_from;
          if (in == model_input) s.grad_input = false;  // the batch needs no gradient
        } else {
          in = tr.alloc(B * static_cast<std::uint64_t>(l.input_elems) * dt);
        }
        in_elems = l.input_elems;
        tr.release(cur);
      }
      s.input_elems = in_elems > 0 ? in_elems : 0;
      if (l.kind == LayerKind::Linear && !cublas_ready && opt.cublas_workspace > 0) {
        tr.alloc(opt.cublas_workspace);  // cuBLAS keeps its workspace for the handle's lifetime
        cublas_ready = true;
      }
      std::uint32_t out;
      if (l.inplace) {
        out = in;
        tr.hold(out);
      } else {
        out = tr.alloc(B * static_cast<std::uint64_t>(out_elems) * dt);
      }
      if (s.conv) tr.transient(conv_ws(l, in_elems, out_elems));
      for (const auto& st : l.saved) {
        switch (st.what) {
          case SavedTensor::What::Input:
            if (l.kind == LayerKind::Attention) {
              s.tensors.push_back(tr.alloc(st.bytes(static_cast<std::int64_t>(B))));
            } else {
              tr.hold(in);
              s.tensors.push_back(in);
            }
            break;
          case SavedTensor::What::Output:
            tr.hold(out);
            s.tensors.push_back(out);
            break;
          default:
            s.tensors.push_back(tr.alloc(st.bytes(static_cast<std::int64_t>(B))));
        }
      }
      tr.release(in);
      cur = out;
      cur_elems = out_elems;
      output_of[i] = out;
      keep_for_readers(static_cast<int>(i), out);
    }

    // ---- loss: cross entropy = log_softmax (kept for backward) + nll ----
    const std::uint64_t logits = B * static_cast<std::uint64_t>(std::max<std::int64_t>(cur_elems, 1)) * dt;
    const std::uint32_t logp = tr.alloc(logits);
    const std::uint32_t loss = tr.alloc(dt);
    tr.release(cur);

    // ---- backward ----
    tr.transient(dt);  // ones_like(loss)
    std::uint32_t grad = tr.alloc(logits);  // d loss / d logits
    tr.release(logp);
    std::vector<std::uint32_t> grads;  // parameter gradients (set_to_none frees them each step)
    // AddBackward hands its output gradient to every input. Autograd runs the main branch first
    // (created last, highest sequence number), so the shortcut's copy stays alive until the
    // backward reaches the shortcut branch; the two gradients of the block input are then summed
    // in place into the one that arrived first.
    std::unordered_map<int, std::uint32_t> pending;  // producer -> gradient an Add holds for it
    std::unordered_map<int, std::uint32_t> aside;    // producer -> main-branch gradient awaiting the shortcut's
    int grad_for = static_cast<int>(g.layers.size()) - 1;  // the layer whose output `grad` belongs to
    auto arrive = [&](int producer) {
      grad_for = producer;
      if (auto it = pending.find(producer); it != pending.end()) {  // identity shortcut: summed into grad
        tr.release(it->second);
        pending.erase(it);
      }
      if (auto it = aside.find(producer); it != aside.end()) {  // end of a shortcut branch
        tr.release(grad);
        grad = it->second;
        aside.erase(it);
      }
    };
    for (std::size_t r = g.layers.size(); r-- > 0;) {
      const Layer& l = g.layers[r];
      Saved& s = saved[r];
      const int ri = static_cast<int>(r);
      if (grad_for != ri) {
        // The chain jumped past this layer (the main branch read the block input): this layer
        // ends a shortcut branch, whose gradient an Add has been holding.
        if (auto it = pending.find(ri); it != pending.end()) {
          if (auto a = aside.find(grad_for); a != aside.end()) tr.release(grad);  // summed into it
          else aside[grad_for] = grad;
          grad = it->second;
          pending.erase(it);
        }
        grad_for = ri;
      }
      if (l.kind == LayerKind::Add) {
        for (int p : l.extra_inputs) {
          tr.hold(grad);
          if (auto it = pending.find(p); it != pending.end()) tr.release(it->second);  // summed
          pending[p] = grad;
        }
      }
      // Views, containers and AddBackward/CatBackward pass the gradient on (as is, or as slices).
      if (is_view(l.kind) || l.kind == LayerKind::Unknown || l.kind == LayerKind::Container ||
          l.kind == LayerKind::Add || l.kind == LayerKind::Concat) {
        arrive(ri - 1);
        continue;
      }
      std::uint32_t gin = 0;
      const bool has_gin = s.grad_input && s.input_elems > 0;
      if (has_gin) gin = tr.alloc(B * static_cast<std::uint64_t>(s.input_elems) * dt);
      if (s.conv) tr.transient(conv_ws(l, s.input_elems, l.out_elems()));
      for (auto b : params[r]) grads.push_back(tr.alloc(b));
      tr.release(grad);
      for (auto t : s.tensors) tr.release(t);
      s.tensors.clear();
      if (has_gin) {
        grad = gin;
      } else {
        grad = tr.alloc(1);  // nothing flows further; keep the bookkeeping uniform
      }
      arrive(s.input_producer);
    }
    tr.release(grad);
    for (const auto& [producer, t] : pending) tr.release(t);  // gradients of the batch: dropped
    for (const auto& [producer, t] : aside) tr.release(t);
    tr.release(loss);

    // ---- optimizer.step() ----
    if (!state_ready) {
      for (auto b : all_params)
        for (int k = 0; k < n_state; ++k) tr.alloc(b);  // zeros_like(p), kept for good
      state_ready = true;
    }
    if (n_temp > 0) {
      std::vector<std::uint32_t> temps;
      for (int k = 0; k < n_temp; ++k)
        for (auto b : all_params) temps.push_back(tr.alloc(b));
      for (auto t : temps) tr.release(t);
    }
    // ---- zero_grad(set_to_none=True), end of iteration ----
    for (auto t : grads) tr.release(t);
    for (auto t : batch_tensors) tr.release(t);
  }
  return ev;
}

}  // namespace colo::estimate
