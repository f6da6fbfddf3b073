#include "daemon/config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include <unistd.h>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "core/error.h"
#include "core/limits.h"
#include "core/one_line.h"
#include "core/parse_number.h"
#include "daemon/api_server.h"
#include "daemon/checkpoint_request.h"
#include "daemon/client/job_request.h"
#include "daemon/client/policy_file.h"
#include "daemon/client/toml_reader.h"
#include "daemon/listen_address.h"
#include "gpu/fake_nvml/fake_spec.h"
#include "estimate/calibration/calibration_profile.h"
#include "estimate/trace/trace_replay.h"

namespace colo::daemon {

DaemonConfig load_config(const std::string& path, DaemonConfig c) {
  // toml++ reads a directory as an empty file; a config path must name a regular file.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UserError(fmt::format("{}: is a directory, not a config file", path));
  const toml::table t = parse_toml_file(path);
  const TomlReader r{path};
  const toml::node* policy_node = nullptr;
  for (const auto& [sk, snode] : t) {
    const std::string section(sk.str());
    const toml::table& s = r.table(snode, section);
    if (section == "policies") {  // [policies.NAME]: the site's own policy definitions
      c.policies = read_policy_definitions(s, r);
      continue;
    }
    static const std::set<std::string> kSections = {"paths",    "gpus", "policy", "recovery", "estimator",
                                                    "sharing",  "sampling", "web", "slots",   "jobs"};
    if (!kSections.count(section)) r.bad(snode, fmt::format("unknown section [{}]", one_line(section)));
    for (const auto& [kk, n] : s) {
      const std::string k(kk.str());
      const std::string full = section + "." + k;
      if (section == "paths" && k == "state_dir") c.state_dir = r.str(n, full);
      else if (section == "paths" && k == "socket") {
        c.socket = r.str(n, full);
        if (const std::string why = socket_path_problem(c.socket); !why.empty()) r.bad(n, "'paths.socket': " + why);
      } else if (section == "gpus" && k == "managed") {
        const toml::array* a = n.as_array();
        if (!a) r.bad(n, "'gpus.managed' must be an array of indices or UUIDs");
        // An empty list would manage nothing, yet read as "every GPU": say which is meant.
        if (a->empty()) r.bad(n, "'gpus.managed' is empty (leave it out to manage every GPU)");
        c.managed.clear();
        for (const toml::node& e : *a) {
          std::string id;
          if (e.is_integer()) {
            if (e.as_integer()->get() < 0 || e.as_integer()->get() > 1023)
              r.bad(e, "'gpus.managed' indices are NVML indices, 0..1023");
            id = std::to_string(e.as_integer()->get());
          } else if (e.is_string()) {
            id = e.as_string()->get();
            if (id.empty() || !control_char_in(id).empty()) r.bad(e, "'gpus.managed' entries must be non-empty UUIDs");
          } else {
            r.bad(e, "'gpus.managed' entries must be integers (NVML index) or UUID strings");
          }
          if (std::find(c.managed.begin(), c.managed.end(), id) != c.managed.end())
            r.bad(e, fmt::format("'gpus.managed' lists '{}' twice", one_line(id)));
          c.managed.push_back(id);
        }
      } else if (section == "gpus" && k == "nvml_library") c.nvml_library = r.str(n, full);
      else if (section == "gpus" && k == "fake") {
        c.fake_gpus = r.str(n, full);
        try {
          gpu::parse_fake_gpu_spec(c.fake_gpus);
        } catch (const UserError& e) {
          r.bad(n, e.what());
        }
      }
      else if (section == "gpus" && k == "dcgm") {
        c.dcgm = r.str(n, full);
        if (c.dcgm.empty()) r.bad(n, "'gpus.dcgm' must be \"embedded\", \"off\" or an nv-hostengine address");
      } else if (section == "gpus" && k == "dcgm_library") c.dcgm_library = r.str(n, full);
      else if (section == "policy" && k == "name") {
        c.policy = r.str(n, full);
        policy_node = &n;
      } else if (section == "policy" && k == "conditions") c.conditions.enabled = r.boolean(n, full);
      else if (section == "policy" && k == "smact_cap") c.conditions.smact_cap = r.number(n, full, 0.0, 1.0);
      else if (section == "policy" && k == "margin") c.conditions.margin_mib = r.memory(n, full, 0);
      else if (section == "policy" && k == "min_free_unknown") c.conditions.min_free_unknown_mib = r.memory(n, full, 0);
      else if (section == "policy" && k == "backfill") c.backfill.max_overtakes = static_cast<int>(r.integer(n, full, 0, 1000000));
      else if (section == "policy" && k == "backfill_depth") c.backfill.depth = static_cast<int>(r.integer(n, full, 1, 1000000));
      else if (section == "policy" && k == "floor") {
        const std::string v = r.str(n, full);
        if (v != "unknown" && v != "always") r.bad(n, fmt::format("'policy.floor' must be \"unknown\" or \"always\", not '{}'", v));
        c.conditions.floor_always = v == "always";
      } else if (section == "policy" && k == "adds_progress") c.conditions.adds_progress = r.boolean(n, full);
      else if (section == "policy" && k == "interference") c.conditions.interference = r.number(n, full, 0.0, 1.0);
      else if (section == "recovery" && k == "mode") {
        const std::string v = r.str(n, full);
        auto m = recovery_mode_from_string(v);
        if (!m) r.bad(n, fmt::format("unknown recovery mode '{}' (strict, loose)", v));
        c.recovery.mode = *m;
      } else if (section == "recovery" && k == "step") c.recovery.step_mib = r.memory(n, full, 1);
      else if (section == "recovery" && k == "share_after_peak") c.recovery.share_after_peak = r.boolean(n, full);
      else if (section == "recovery" && k == "share_after_s") c.share_after_s = r.number(n, full, 0, 86400);
      else if (section == "recovery" && k == "max_attempts") c.max_attempts = static_cast<int>(r.integer(n, full, 1, 1000));
      else if (section == "recovery" && k == "lost") {
        const std::string v = r.str(n, full);
        if (v != "requeue" && v != "fail") r.bad(n, fmt::format("'recovery.lost' must be 'requeue' or 'fail', not '{}'", v));
        c.requeue_lost = v == "requeue";
      } else if (section == "estimator" && k == "history") c.history = r.boolean(n, full);
      else if (section == "estimator" && k == "history_margin") c.history_margin = r.number(n, full, 0.0, 10.0);
      else if (section == "estimator" && k == "probe_timeout_s") c.probe_timeout = r.number(n, full, 0.1, 86400);
      else if (section == "estimator" && k == "probe_memory") c.probe_memory_mib = r.memory(n, full, 1024);
      else if (section == "estimator" && k == "probe_concurrency")
        c.probe_concurrency = static_cast<int>(r.integer(n, full, 1, 64));
      else if (section == "estimator" && k == "probe_python") {
        c.probe_python = r.str(n, full);
        if (c.probe_python != "job" &&
            (c.probe_python.empty() || c.probe_python[0] != '/' || ::access(c.probe_python.c_str(), X_OK) != 0))
          r.bad(n, fmt::format("'estimator.probe_python' must be 'job' or the absolute path of a Python interpreter; "
                               "'{}' is neither", one_line(c.probe_python)));
      } else if (section == "estimator" && k == "probe_gpu") {
        c.probe_gpu = r.str(n, full);
        try {
          // The profile and the measured workspace table it names: a bad one is found at start,
          // not at each job's estimate.
          estimate::TraceReplayOptions::from_profile(estimate::load_profile(c.probe_gpu));
        } catch (const UserError& e) {
          r.bad(n, fmt::format("'estimator.probe_gpu': {}", e.what()));
        }
      }
      else if (section == "sharing" && k == "mode") {
        const std::string v = r.str(n, full);
        if (v == "streams") c.sharing = Sharing::Streams;
        else if (v == "mps") c.sharing = Sharing::Mps;
        else r.bad(n, fmt::format("'sharing.mode' must be 'streams' or 'mps', not '{}'", v));
      } else if (section == "sharing" && k == "mps_control") {
        c.mps_control = r.str(n, full);
        // Run as a program when MPS starts: empty, it failed only then, on the first MPS job.
        if (c.mps_control.empty()) r.bad(n, "'sharing.mps_control' is empty (the MPS control program, default nvidia-cuda-mps-control)");
      }
      else if (section == "sharing" && k == "mps_root") c.mps_root = r.str(n, full);
      else if (section == "sampling" && k == "interval_s") c.sample_interval = r.number(n, full, 0.05, 60);
      else if (section == "sampling" && k == "window_s") c.window = r.number(n, full, 1, 3600);
      else if (section == "web" && k == "listen") {
        c.web_listen = r.str(n, full);
        if (!c.web_listen.empty()) {
          try {
            ListenAddress::parse(c.web_listen, "web.listen");
          } catch (const UserError& e) {
            r.bad(n, e.what());
          }
        }
      } else if (section == "web" && k == "public_job_details") c.web_public_job_details = r.boolean(n, full);
      else if (section == "web" && k == "assets") c.web_assets = r.str(n, full);
      else if (section == "slots" && k == "length_s") c.slots.slot_s = r.number(n, full, 0, 366 * 86400.0);
      else if (section == "slots" && k == "notice_s") c.slots.notice_s = r.number(n, full, 0, 366 * 86400.0);
      else if (section == "slots" && k == "min_run_s") c.slots.min_run_s = r.number(n, full, 0, 366 * 86400.0);
      else if (section == "slots" && k == "signal") {
        const std::string v = r.str(n, full);
        const auto signo = checkpoint_signal_from_name(v);
        if (!signo) r.bad(n, fmt::format("'slots.signal' must be USR1, USR2, INT or HUP, not '{}'", v));
        c.checkpoint_signal = *signo;
      }
      else if (section == "jobs" && k == "cancel_grace_s") c.cancel_grace = r.number(n, full, 0, 3600);
      else if (section == "jobs" && k == "max_log") c.max_log_mib = r.memory(n, full, 0);
      else if (section == "jobs" && k == "keep_logs_days") c.keep_logs = r.number(n, full, 0, 36500) * 86400;
      else if (section == "jobs" && k == "max_request_bytes")
        c.max_request_bytes = static_cast<std::size_t>(r.integer(n, full, 1024, std::int64_t{64} * 1024 * 1024));
      else r.bad(n, fmt::format("unknown key '{}'", full));
    }
  }
  // The window averages samples: shorter than one interval it would hold none.
  if (c.window < c.sample_interval)
    throw UserError(fmt::format("{}: [sampling] window_s = {:g} is shorter than interval_s = {:g}", path, c.window,
                                c.sample_interval));
  if (const std::string why = time_slots_problem(c.slots); !why.empty())
    throw UserError(fmt::format("{}: [slots] length_s = {:g}, notice_s = {:g}: {}", path, c.slots.slot_s,
                                c.slots.notice_s, why));
  // The name may refer to a [policies.NAME] table anywhere in the file.
  if (!policy_exists(c.policy, c.policies)) {
    try {
      resolve_policy(c.policy, c.policies, c.conditions);
    } catch (const UserError& e) {
      if (policy_node) r.bad(*policy_node, fmt::format("'policy.name': {}", e.what()));
      throw;
    }
  }
  if (const std::string why = policy_problem(c); !why.empty()) throw UserError(fmt::format("{}: {}", path, why));
  return c;
}

std::string policy_problem(const DaemonConfig& c) {
  // (A site's policy cannot take a shipped one's name: policy_file.cpp.)
  if (c.policy == "node-weight")
    return "policy 'node-weight' ranks Slurm nodes by their GPUs (colo slurm node-weight); colod places jobs on "
           "one server, whose GPUs all share its rank: use magm, first-fit or best-fit";
  if (!c.conditions.adds_progress) return "";
  if (!c.conditions.enabled) return "[policy] adds_progress = true weighs co-runners; conditions = false has none";
  if (resolve_policy(c.policy, c.policies, c.conditions).whole_gpus)
    return fmt::format("[policy] adds_progress = true weighs co-runners; policy '{}' places whole GPUs", one_line(c.policy));
  return "";
}

}  // namespace colo::daemon
