#pragma once
// The workspace of a convolution shape a GPU's table does not list, taken from the measured shapes
// nearest to it. cuDNN picks its algorithm (and so its workspaces) from the shape by heuristics no
// formula follows: shapes of one class (conv_shape.h) that are close in batch, channels, image and
// kernel size mostly get the same algorithm, whose workspaces scale with the problem. So a shape
// not measured replays a near shape's measured steps — outputs and transients in their order —
// with each transient scaled by the two shapes' base_bytes. Which neighbour is right is unknown:
// the trace replay tries the k nearest and keeps the largest peak (trace_replay.h), because the
// caching allocator's reserved peak depends on the exact transient sizes, not only on their sum.
#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "estimate/trace/conv/conv_shape.h"
#include "estimate/trace/conv/conv_workspace_table.h"

namespace colo::estimate {

class ConvWorkspaceNeighbours {
 public:
  // Indexes every key of `table` that parses as a shape (others can only be found exactly).
  explicit ConvWorkspaceNeighbours(std::shared_ptr<const ConvWorkspaceTable> table);

  struct Neighbour {
    const std::string* key;                        // the measured shape
    const std::vector<ConvWorkspaceStep>* steps;   // what it allocated
    double scale;                                  // base_bytes(shape) / base_bytes(measured)
  };
  // Up to k measured shapes of `s`'s class, nearest first (squared distance of the features; ties by
  // key, so the answer does not depend on the table's order). Empty when the table has none of the class.
  std::vector<Neighbour> nearest(const ConvShape& s, std::size_t k) const;
  // The measured steps of `n` with every transient scaled (rounded, at most `max_bytes`).
  static std::vector<ConvWorkspaceStep> scaled_steps(const Neighbour& n, std::uint64_t max_bytes);

  std::size_t indexed() const { return indexed_; }
  const ConvWorkspaceTable& table() const { return *table_; }

 private:
  struct Entry {
    std::array<double, 5> features;
    const std::string* key;
    const std::vector<ConvWorkspaceStep>* steps;
    std::uint64_t base;
  };
  std::shared_ptr<const ConvWorkspaceTable> table_;
  std::unordered_map<std::string, std::vector<Entry>> by_class_;
  std::size_t indexed_ = 0;
};

// The index of the table at `path` (load_conv_workspace_table), built once per process.
std::shared_ptr<const ConvWorkspaceNeighbours> load_conv_workspace_neighbours(const std::string& path);

}  // namespace colo::estimate
