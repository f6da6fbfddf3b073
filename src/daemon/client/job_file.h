#pragma once
// TOML job files for `colo submit FILE.toml`:
//
//   name    = "resnet50-b64"
//   command = ["python", "train.py", "--batch", "64"]   # or one string, run with /bin/sh -c
//   gpus    = 1
//   mem     = "12GiB"                                   # optional per-GPU need
//   workdir = "/home/me/proj"                           # optional, default: the file's folder
//   [env]
//   OMP_NUM_THREADS = "4"
//   [estimate]                                          # optional, instead of mem
//   estimator = "allocsim"
//   summary   = "resnet50_64.model"                     # relative to the job file's folder
//   batch     = 64
//   optimizer = "adam"
//   seq_len   = 512                                     # optional (transformers)
//
// Unknown keys are errors, so a typo never silently drops a setting.
#include <cstdint>
#include <optional>
#include <string>

#include "daemon/client/job_request.h"

namespace colo::daemon {

struct EstimateSpec {
  std::string estimator = "allocsim";
  std::string summary;  // path
  std::int64_t batch = 0;
  std::string optimizer = "adam";
  std::int64_t seq_len = 0;
  std::string gpu = "a100-40gb";  // the calibration profile the estimate is made for (calibration/<gpu>.json)
};

struct JobFile {
  SubmitRequest request;  // mem_mib/mem_source set when `mem` is given
  std::optional<EstimateSpec> estimate;
  // "FILE:LINE: workdir '…' is not a directory" when the file's workdir is missing, else empty:
  // the submitter's to raise unless --workdir replaces it (checked at submit, not at launch).
  std::string workdir_problem;
};

// Throws colo::UserError "FILE:LINE: …" (TOML syntax errors, wrong types, unknown keys).
JobFile parse_job_file(const std::string& path);

}  // namespace colo::daemon
