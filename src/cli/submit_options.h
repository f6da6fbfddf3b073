#pragma once
// `colo submit`'s flags and how they become a SubmitRequest, apart from sending it, so that
// the argument handling can be tested without a daemon (tests/cli/).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "daemon/client/job_request.h"

namespace colo::cli {

struct SubmitOptions {
  int gpus = 0;  // 0 = not given
  std::string mem, estimator, summary, optimizer = "adam", name, workdir, rad, rad_memory = "measured";
  bool mem_given = false;  // --mem was given, even as '' (an error, not "no --mem")
  bool workdir_given = false;  // --workdir was given, even as ''
  bool optimizer_given = false, rad_memory_given = false, name_given = false;  // flags with defaults
  std::int64_t batch = 0, seq_len = 0;  // 0 = not given
  std::vector<std::string> env, args;
  bool json = false;
  estimate::ProbeRequest probe;  // --probe MODEL and its flags (model empty = not given)
  bool probe_script = false;     // --probe-script: probe the Python script the command runs
  bool checkpoint = false;       // --checkpoint: the job checkpoints on request (time slots)
  std::optional<double> smact;   // --smact FRACTION: the submitter's solo SM activity
  std::optional<std::string> gpu;  // --gpu PROFILE: the calibration profile of a summary estimate
};

// Adds submit's flags to `c`, writing into `o` (which must outlive parsing).
void add_submit_options(CLI::App* c, SubmitOptions& o);

// FNV-1a digest of a (summary or script) file's content, 16 hex digits: part of a job's
// fingerprint. Throws colo::UserError when it cannot be read.
std::string digest_file(const std::string& path, const char* what = "model summary");

// The request the flags describe; runs a requested estimate (reads the summary). Throws
// colo::UserError on conflicting or invalid flags.
daemon::SubmitRequest build_submit_request(const SubmitOptions& o);

}  // namespace colo::cli
