#pragma once
// The workload catalog: every workload a trace may name, read from workloads.csv.
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/workloads/workload.h"

#include "sim/models/sm_activity.h"

namespace colo::sim {

class WorkloadCatalog {
 public:
  // Reads the CSV. Required columns: workload, model, dataset, batch_size, gpus, epochs,
  // epoch_minutes, measured_mib, horus_mib, faketensor_mib, gpumemnet_mib, source; optional:
  // summary, optimizer, seq_len, smact. Throws colo::UserError "FILE:LINE: problem" on bad input.
  // Rows without an smact column take the class table's value (the model file's [smact]).
  static WorkloadCatalog load(const std::string& path, const SmActivityTable& smact = default_sm_activity_table());
  static WorkloadCatalog parse(std::string_view text, const std::string& path,
                               const SmActivityTable& smact = default_sm_activity_table());
  // Builds a catalog from workloads made in code (synthetic traces, tests).
  static WorkloadCatalog from(std::vector<Workload> workloads);

  const Workload* find(std::string_view name) const;
  const std::vector<Workload>& all() const { return workloads_; }
  const std::string& path() const { return path_; }

 private:
  void index();
  std::string path_;
  std::vector<Workload> workloads_;
  std::unordered_map<std::string, std::size_t> by_name_;
};

}  // namespace colo::sim
