#pragma once
// What a client sends to submit a job (POST /v1/jobs), shared by the CLI and colod. The JSON
// form is strict: unknown fields, wrong types and out-of-range values are refused with a
// one-line message naming the field.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.h"
#include "estimate/trace/probe_runner.h"

namespace colo::daemon {

struct SubmitRequest {
  std::string name;                        // free text, default: the program's base name
  std::vector<std::string> argv;           // the command, argv[0] looked up in the job's PATH
  int gpus = 1;
  std::optional<MiB> mem_mib;              // per-GPU need; nullopt = unknown
  std::string mem_source;                  // who said so: "user", "allocsim", "rad:measured", …
  std::string mem_explanation;             // one line from the estimator, shown by `colo show`
  std::string workdir;                     // absolute; the client's cwd by default
  std::map<std::string, std::string> env;  // added to the clean environment
  // What besides argv identifies "the same job" for the history estimator: estimator name,
  // summary digest, batch, optimizer, … (the CLI fills it).
  nlohmann::json fingerprint_inputs = nlohmann::json::object();
  // colo submit --probe: colod runs the probe (as the submitter) and estimates with
  // probe_estimator ("trace" or "faketensor"); mem_mib, if any, is the fallback.
  std::optional<estimate::ProbeRequest> probe;
  std::string probe_estimator = "trace";
  // The job checkpoints when colod asks (time slots, docs/DAEMON.md "Time slots"): it may be
  // stopped at its slot's end and resumed later.
  bool checkpoint = false;
  // Predicted solo SM activity (0..1) and who said so ("user", "gpumemnet-activity"); read by
  // the smact_predicted filter. colod prefers the history of the same job when it has one.
  std::optional<double> smact;
  std::string smact_source;
  // The submitter's file-creation mask (0..0777): the job creates files as the user's shell would,
  // not with colod's own 077. Absent: 022.
  std::optional<int> umask;
};

nlohmann::json to_json(const SubmitRequest& r);
// Throws colo::UserError ("field 'gpus': expected an integer in 1..64").
SubmitRequest submit_request_from_json(const nlohmann::json& j);

// nlohmann::json parses without recursion but copies, compares and dumps recursively, so a value
// nested 100 000 deep (a 1 MiB body holds that) would overflow the stack once copied.
// submit_request_from_json refuses requests nested deeper than this; the check is iterative.
constexpr std::size_t kMaxJsonNesting = 64;
bool json_nested_deeper_than(const nlohmann::json& root, std::size_t max_depth);

// Parses a request body as JSON, refusing what nlohmann would take silently: an object with the
// same key twice ({"argv": [..], "argv": [..]}; nlohmann keeps the last). Returns a discarded
// value for text that is not JSON; throws colo::UserError ("request body: duplicate key 'argv'").
nlohmann::json parse_request_body(std::string_view text);

// Variables colo sets itself; a job may not override them.
bool is_reserved_env(std::string_view name);
// Throws colo::UserError unless name is [A-Za-z_][A-Za-z0-9_]* and not reserved.
void check_env_name(std::string_view name);

// "12GiB", "512MiB", "1.5GiB", "40GB" (decimal GB = 10^9 bytes), "4096" (MiB). Throws
// colo::UserError naming the text.
MiB parse_memory(std::string_view text);
std::string format_mib(MiB mib);  // "12.0 GiB" / "512 MiB"

}  // namespace colo::daemon
