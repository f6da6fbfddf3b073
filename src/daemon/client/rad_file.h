#pragma once
// The research prototype's job files (`.rad`, data/carma/rad/). The format is
// line-based and positional; lines starting with '#' are comments and blank lines are skipped:
//
//   1  environment activation   "conda activate tf" (kept for the record; colo has no conda)
//   2  command                  "python …/Inception.py --batch_size 32"   (run with /bin/sh -c)
//   3  model summary file       "Inception_32.model" (in ../summaries/ next to the rad/ folder)
//   4  dataset                  "/raid/datasets/imagenet" (informational)
//   5  batch size               integer ≥ 1
//   6  placement mode           "exclusive" or "shared" (what the prototype asked for)
//   7  GPUs                     integer ≥ 1
//   8  measured peak MiB        optional, nvidia-smi on an A100 40 GB
//   9  Horus estimate MiB       optional
//  10  FakeTensor estimate MiB  optional
//  11  GPUMemNet estimate MiB   optional
//
// Lines 8–11 are all present or stop early (gpt2_xl.rad has none); numbers may be decimal.
#include <optional>
#include <string>

#include "core/units.h"

namespace colo::daemon {

struct RadJob {
  std::string path;
  std::string activation;
  std::string command;
  std::string summary_file;  // as written
  std::string summary_path;  // resolved: <dir of rad>/../summaries/<file>, or next to the .rad
  std::string dataset;
  int batch = 0;
  std::string mode;
  int gpus = 1;
  std::optional<MiB> measured_mib, horus_mib, faketensor_mib, gpumemnet_mib;
};

// Throws colo::UserError "FILE:LINE: …" on a missing file, a missing field or a bad number.
RadJob parse_rad_file(const std::string& path);

}  // namespace colo::daemon
