#pragma once
// Evaluation/calibration data sets with measured peaks: the GPUMemNet CSVs (one synthetic model
// per row) and carma's workloads.csv (real models, summaries in summaries/ next to it).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/units.h"
#include "estimate/graph/model_graph.h"
#include "estimate/optimizer.h"

namespace colo::estimate {

enum class DatasetFormat { GpuMemNetMLP, GpuMemNetCNN, CarmaWorkloads };
DatasetFormat parse_dataset_format(const std::string& s);  // gpumemnet-mlp|gpumemnet-cnn|carma-workloads

// Deterministic 80/20 split of the GPUMemNet rows by a hash (FNV-1a 64) of the row's filename:
// train when hash % 10 < 8. The carma workloads are never trained on: all of them are "test".
enum class Split { All, Train, Test };
Split parse_split(const std::string& s);  // all|train|test
bool in_train_split(const std::string& key);

struct DatasetRow {
  std::string id;                            // filename (GPUMemNet) or workload name (carma)
  std::string location;                      // FILE:LINE for messages
  std::shared_ptr<const ModelGraph> graph;  // null for a GPUMemNet row that lists no layers
  std::int64_t batch = 0;
  std::optional<Optimizer> optimizer;        // carma states it; GPUMemNet rows do not
  std::optional<MiB> measured;               // absent when not published / not recorded
  bool oom = false;                          // Status OOM_CRASH: did not fit the GPU
  int gpus = 1;
  std::string model;                         // carma: the network (torchvision name where there is one)
  std::string data;                          // carma: the data set it trained on (imagenet, cifar100, wiki, ...)
  std::int64_t seq_len = 0;                  // carma transformers: tokens per sample (0 = not stated)
};

// Throws colo::UserError (FILE:LINE: problem) on malformed rows.
std::vector<DatasetRow> load_dataset(const std::string& path, DatasetFormat fmt, Split split);

}  // namespace colo::estimate
