#pragma once
// A GPU's measured convolution workspaces (scripts/gpu-conv-workspace.py, then
// scripts/conv-workspace-table.py): for each convolution shape key (python/colo_probe/conv_shape.py),
// what the convolution allocated through PyTorch's caching allocator on that GPU, in order — its
// outputs and cuDNN's transient workspaces. With cudnn.benchmark off, PyTorch takes the first engine
// of cuDNN's heuristic list whose workspace it can allocate, so the workspace is a property of the
// shape, the GPU and the cuDNN version, not a multiple of the activation; the trace replay looks
// each convolution up here; for shapes not measured it replays the nearest measured shapes'
// steps (conv_workspace_neighbours.h), or the profile's ratios.
//
// File format (version 1), one line per key:
//   colo-conv-workspace 1
//   H {json}                         what was measured: gpu, cudnn, torch, command
//   <key><TAB><steps>                steps, space-separated, in the order they happened:
//                                    o   an output (the probe trace's next M record of the op)
//                                    +N  a transient allocation of N bytes (numbered 0, 1, ... in order)
//                                    -I  transient I is freed
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace colo::estimate {

// A shape key: letters, digits and ':' (f:128x64x56x56:...), at most 256 bytes.
bool valid_conv_key(std::string_view s);

struct ConvWorkspaceStep {
  enum class Kind : std::uint8_t { Output, Alloc, Free };
  Kind kind = Kind::Output;
  std::uint32_t index = 0;  // Free: which transient (0-based, in allocation order)
  std::uint64_t bytes = 0;  // Alloc
};

class ConvWorkspaceTable {
 public:
  // Throws colo::UserError "SOURCE:LINE: ..." for anything but a well-formed table: unknown
  // version, a bad key or step, a free of a transient never allocated or freed twice, a
  // transient never freed, a key listed twice.
  static ConvWorkspaceTable parse(std::string_view text, const std::string& source);
  const std::vector<ConvWorkspaceStep>* find(std::string_view key) const;
  std::size_t size() const { return steps_.size(); }
  // Every key and its steps, in no particular order.
  template <typename F>
  void for_each(F&& f) const {
    for (const auto& [key, steps] : steps_) f(key, steps);
  }
  const nlohmann::json& header() const { return header_; }
  const std::string& source() const { return source_; }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::vector<ConvWorkspaceStep>, Hash, std::equal_to<>> steps_;
  nlohmann::json header_;
  std::string source_;
};

// Reads a table once per process (the daemon and `estimate eval` replay many traces): later calls
// with the same path share it. Throws colo::UserError when it cannot be read or parsed.
std::shared_ptr<const ConvWorkspaceTable> load_conv_workspace_table(const std::string& path);

}  // namespace colo::estimate
