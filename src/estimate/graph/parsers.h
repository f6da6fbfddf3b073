#pragma once
// Parsers from the model descriptions colo accepts to the common ModelGraph. Each lives in its own
// file (parse_<format>.cpp). Every parser throws colo::UserError with a one-line message
// "SOURCE:LINE: problem" on malformed input; `source` is the file name used in that message.
#include <cstdint>
#include <string>
#include <string_view>

#include "estimate/graph/model_graph.h"

namespace colo::estimate {

// torchsummary's table ("Layer (type)  Output Shape  Param #"); the batch dim of the shapes is dropped.
ModelGraph parse_torchsummary(std::string_view text, const std::string& source);

// A printed nn.Module tree whose lines end in ", N params" (the carma transformer summaries).
// It has no shapes: they are derived from layer arguments and seq_len (tokens per sample).
ModelGraph parse_module_repr(std::string_view text, const std::string& source, std::int64_t seq_len);

// Keras model.summary() text ("Layer (type)  Output Shape  Param #" with "(None, ...)" shapes).
ModelGraph parse_keras(std::string_view text, const std::string& source);

// One GPUMemNet dataset row: `filename` (architecture as key:value pairs joined by '_') and the
// Activations-Params list "[('conv2d', 30276, 2744), ...]". For CNN rows the activation counts
// are H*W only; channels and kernel sizes are recovered from parameter counts (see the .cpp).
enum class GpuMemNetKind { MLP, CNN };
ModelGraph parse_gpumemnet_row(std::string_view filename, std::string_view activations_params,
                               GpuMemNetKind kind, const std::string& location);

// Reads a summary file and picks the parser from its content (torchsummary table, Keras summary,
// or module repr). seq_len: tokens per sample for module reprs (0 = 512).
ModelGraph load_summary(const std::string& path, std::int64_t seq_len = 0);

}  // namespace colo::estimate
