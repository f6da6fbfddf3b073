#pragma once
// The one representation every parser produces and every estimator reads: a model as an ordered
// list of layers (forward order), each with its type, output shape, parameter count and what it
// keeps alive for the backward pass. Shapes are per sample; the batch is a request parameter, so
// one graph serves every batch size.
//
// Unknown layer types are kept (kind == LayerKind::Unknown, original name preserved) and listed in
// ModelGraph::unknown_types(); an estimator decides what to do with them, nothing is guessed here.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace colo::estimate {

// Normalised layer kinds. Activation functions other than ReLU/ReLU6/Sigmoid/Tanh fall in
// Activation (original name in Layer::type_name says which one). Container marks a composite
// module (torchsummary prints e.g. Bottleneck or BasicBlock after its children): it allocates
// nothing of its own except, for residual blocks, the sum of its branches.
enum class LayerKind {
  Conv,             // Conv1d/2d/3d, Conv1D (GPT-2's linear-as-conv is Linear, see parser)
  ConvTranspose,
  Linear,           // Linear, Dense, GPT-2 Conv1D
  BatchNorm,        // BatchNorm1d/2d/3d, BatchNormAct2d (its fused activation is noted in flags)
  LayerNorm,
  GroupNorm,
  ReLU,             // ReLU, ReLU6: backward needs only the output
  Sigmoid,          // backward needs the output
  Tanh,             // backward needs the output
  Activation,       // GELU, SiLU, Softplus, ELU, SELU, Mish, LeakyReLU, PReLU, ...: backward needs the input
  Softmax,          // Softmax / LogSoftmax: backward needs the output
  Dropout,          // keeps a mask (bool, 1 byte per element)
  MaxPool,          // keeps int64 indices
  AvgPool,          // keeps nothing but the input shape
  AdaptiveAvgPool,
  Flatten,          // a view: no allocation
  Identity,         // no allocation
  Embedding,        // keeps the int64 indices (already the input batch)
  Attention,        // a self-attention block (module repr): saved tensors depend on seq_len
  Add,              // out-of-place sum of branches (x + shortcut): a new tensor, keeps nothing
  Concat,           // torch.cat of feature maps (dense blocks): a new tensor, keeps nothing
  Container,        // composite module; see above
  Unknown,
};

std::string_view to_string(LayerKind k);

// Maps an original type name ("Conv2d", "GELUActivation", "BatchNorm2d", "Dense", "gelu"...)
// to its kind; LayerKind::Unknown when not recognised.
LayerKind classify_layer_type(std::string_view type_name);

// One tensor a layer keeps for backward: bytes = per_sample_bytes * batch + fixed_bytes.
struct SavedTensor {
  enum class What { Input, Output, Mask, Indices, Stats, Other };
  What what = What::Other;
  std::int64_t per_sample_bytes = 0;
  std::int64_t fixed_bytes = 0;
  std::int64_t bytes(std::int64_t batch) const { return per_sample_bytes * batch + fixed_bytes; }
};
std::string_view to_string(SavedTensor::What w);

struct Layer {
  LayerKind kind = LayerKind::Unknown;
  std::string type_name;                 // as the source spelled it, e.g. "Conv2d", "GELU"
  std::string name;                      // path or index label if the source has one ("" otherwise)
  std::vector<std::int64_t> out_shape;   // per-sample output dims (no batch), e.g. {64,112,112}
  std::int64_t params = 0;               // parameters owned directly by this layer
  int depth = 0;                         // nesting depth (0 = top level) where the source shows it
  bool inplace = false;                  // output overwrites its input (ReLU(inplace=True))
  // Optional facts a parser may know (0 when unknown).
  std::int64_t kernel = 0;               // square kernel size for conv/pool
  std::int64_t in_features = 0;          // in-channels / in-features
  std::int64_t out_features = 0;         // out-channels / out-features
  // The activation count the source itself reported, before any normalisation (the GPUMemNet CSV
  // "activations": per-sample units for MLPs, H*W only for CNNs); -1 when the source has none.
  std::int64_t source_activations = -1;
  // Attention layers: heads, and whether the scores are materialised (explicit softmax over a
  // [heads, S, S] matrix, e.g. XLNet) instead of a fused kernel (SDPA memory-efficient attention).
  std::int64_t attn_heads = 0;
  bool attn_materialized = false;
  // Filled by ModelGraph::finalize(): per-sample element count of this layer's input, and what the
  // layer keeps alive until its backward runs.
  std::int64_t input_elems = 0;
  std::vector<SavedTensor> saved;
  // A convolution that reads at least twice as many positions per channel as it writes (stride > 1):
  // cuDNN has no FFT/Winograd algorithm for those, and the ones it picks need more workspace.
  bool strided = false;
  // Convs whose in-channels match an earlier tensor rather than the previous one (a residual
  // block's convs read the block input): the index of the layer that produced it, kInputTensor for
  // the model input, kPreviousTensor for the usual case. finalize() searches for it unless a
  // parser that knows the block structure set it beforehand.
  static constexpr int kPreviousTensor = -2;
  static constexpr int kInputTensor = -1;
  int input_from = kPreviousTensor;
  // Add/Concat: the producers (layer index or kInputTensor) of the tensors read besides the previous
  // one; their outputs stay alive until this layer has run (a shortcut branch, a dense block's features).
  std::vector<int> extra_inputs;

  std::int64_t out_elems() const;        // product of out_shape (1 for an empty shape)
};

enum class ModelFamily { Unknown, MLP, CNN, Transformer };
std::string_view to_string(ModelFamily f);

struct ModelGraph {
  std::string name;                      // e.g. the summary file's stem
  std::string source_format;             // "torchsummary", "module-repr", "keras", "gpumemnet-cnn", ...
  ModelFamily family = ModelFamily::Unknown;
  std::vector<std::int64_t> input_shape; // per-sample input dims, e.g. {3,224,224}; {seq_len} for text
  std::int64_t seq_len = 0;              // tokens per sample for transformers (0 = not a sequence model)
  std::int64_t hidden = 0;               // transformer hidden size (0 when unknown)
  std::int64_t dtype_bytes = 4;          // fp32 training everywhere in our data
  std::string activation;                // dominant activation function name, lower case ("relu", "gelu")
  std::int64_t declared_total_params = -1;  // "Total params" as the source printed it (-1 if absent)
  std::vector<Layer> layers;             // forward order

  // Fills Layer::saved for every layer from kinds and shapes (input of layer i = output of the
  // previous non-container layer, or input_shape for the first). Parsers call it last.
  void finalize();

  std::int64_t total_params() const;           // sum of Layer::params
  std::int64_t total_activations() const;      // sum of out_elems() over non-container layers (per sample)
  std::int64_t count(LayerKind k) const;
  std::vector<std::string> unknown_types() const;  // distinct original names of Unknown layers, sorted
};

}  // namespace colo::estimate
