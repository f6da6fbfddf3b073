#pragma once
// The history estimator for Slurm jobs: the peak GPU memory the same job (same fingerprint:
// user, directory, script, estimator inputs) reached in its last successful run on the cluster.
// The recovery agent writes it (<state_dir>/history.json, world-readable, fingerprints only);
// `colo sbatch` reads it before any other estimator.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/units.h"

namespace colo::slurm {

struct PeakRecord {
  MiB peak_mib = 0;
  std::uint64_t job_id = 0;  // the run it came from
};

class PeakHistory {
 public:
  // An absent file is an empty history; a corrupt one throws colo::UserError.
  static PeakHistory load(const std::string& path);
  std::optional<PeakRecord> find(const std::string& fingerprint) const;
  // Keeps at most kMaxPerUser fingerprints of one user ("u<uid>-…"): beyond that the one
  // recorded longest ago goes (never the one just recorded; the order is kept in the file, job
  // ids may wrap), so one user's many distinct jobs cannot grow the file without bound. A file
  // over the cap (an older colo) is trimmed the same way when loaded.
  void record(const std::string& fingerprint, const PeakRecord& r);
  static constexpr std::size_t kMaxPerUser = 1000;
  void save(const std::string& path) const;
  std::size_t size() const { return entries_.size(); }

 private:
  void trim(const std::string& user, const std::string& keep);
  std::map<std::string, PeakRecord> entries_;
  std::map<std::string, std::uint64_t> order_;  // when each was recorded (a counter)
  std::uint64_t next_order_ = 1;
};

std::string history_path(const std::string& state_dir);

}  // namespace colo::slurm
