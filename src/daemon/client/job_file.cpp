#include "daemon/client/job_file.h"
#include "daemon/client/toml_nesting.h"
#include "daemon/client/toml_reader.h"

#include <filesystem>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "core/error.h"
#include "core/limits.h"
#include "core/one_line.h"
#include "estimate/calibration/calibration_profile.h"
#include "estimate/estimator.h"
#include "estimate/optimizer.h"
#include "estimate/input_file.h"

namespace colo::daemon {

namespace {

[[noreturn]] void bad(const std::string& path, const toml::node& n, const std::string& msg) {
  throw UserError(fmt::format("{}:{}: {}", path, n.source().begin.line, msg));
}

std::string need_string(const std::string& path, const toml::node& n, const char* key) {
  if (!n.is_string()) bad(path, n, fmt::format("'{}' must be a string", key));
  return n.as_string()->get();
}

// TOML integers are already int64 (toml++ rejects overflow); the range is colo's.
std::int64_t need_int(const std::string& path, const toml::node& n, const char* key, std::int64_t lo, std::int64_t hi) {
  if (!n.is_integer() || n.as_integer()->get() < lo || n.as_integer()->get() > hi)
    bad(path, n, fmt::format("'{}' must be an integer in {}..{}", key, lo, hi));
  return n.as_integer()->get();
}

}  // namespace

JobFile parse_job_file(const std::string& path) {
  estimate::check_input_size(path, limits::kMaxJobFileBytes, "job file");
  check_toml_nesting(estimate::read_input_file(path, limits::kMaxJobFileBytes, "job file"), path);
  const toml::table t = parse_toml_file(path);
  JobFile jf;
  SubmitRequest& r = jf.request;
  namespace fs = std::filesystem;
  const fs::path dir = fs::absolute(fs::path(path)).parent_path();
  bool have_command = false;
  for (const auto& [key, node] : t) {
    const std::string k(key.str());
    if (k == "name") {
      r.name = need_string(path, node, "name");
    } else if (k == "command") {
      if (node.is_string()) {
        if (node.as_string()->get().find_first_not_of(" \t\r\n") == std::string::npos)
          bad(path, node, "'command' is empty");
        r.argv = {"/bin/sh", "-c", node.as_string()->get()};
      } else if (const toml::array* a = node.as_array()) {
        for (const toml::node& e : *a) r.argv.push_back(need_string(path, e, "command[]"));
        if (r.argv.empty()) bad(path, node, "'command' is an empty array");
        if (r.argv[0].empty()) bad(path, node, "'command' starts with an empty program name");
      } else {
        bad(path, node, "'command' must be a string or an array of strings");
      }
      have_command = true;
    } else if (k == "gpus") {
      r.gpus = static_cast<int>(need_int(path, node, "gpus", 1, limits::kMaxJobGpus));
    } else if (k == "mem") {
      const std::string text = need_string(path, node, "mem");  // its own error names the line already
      try {
        r.mem_mib = parse_memory(text);
      } catch (const UserError& e) {
        bad(path, node, e.what());
      }
      r.mem_source = "user";
    } else if (k == "smact") {
      if (!node.is_number()) bad(path, node, "'smact' must be a number in [0, 1]");
      const double v = node.value<double>().value_or(-1);
      if (!(v >= 0 && v <= 1)) bad(path, node, "'smact' must be a number in [0, 1]");
      r.smact = v;
      r.smact_source = "user";
    } else if (k == "checkpoint") {
      if (!node.is_boolean()) bad(path, node, "'checkpoint' must be true or false");
      r.checkpoint = node.as_boolean()->get();
    } else if (k == "workdir") {
      r.workdir = need_string(path, node, "workdir");
      if (r.workdir.empty() || r.workdir[0] != '/') r.workdir = (dir / r.workdir).lexically_normal().string();
      std::error_code ec;
      if (!fs::is_directory(r.workdir, ec))
        jf.workdir_problem = fmt::format("{}:{}: workdir '{}' is not a directory", path, node.source().begin.line,
                                         one_line(r.workdir));
    } else if (k == "env") {
      const toml::table* e = node.as_table();
      if (!e) bad(path, node, "'env' must be a table of strings");
      for (const auto& [ek, ev] : *e) {
        try {
          check_env_name(ek.str());
        } catch (const UserError& err) {
          bad(path, ev, err.what());
        }
        r.env[std::string(ek.str())] = need_string(path, ev, "env value");
      }
    } else if (k == "estimate") {
      const toml::table* e = node.as_table();
      if (!e) bad(path, node, "'estimate' must be a table");
      EstimateSpec s;
      for (const auto& [ek, ev] : *e) {
        const std::string kk(ek.str());
        if (kk == "estimator") {
          s.estimator = need_string(path, ev, "estimator");
          try {
            estimate::make_estimator(s.estimator);  // the name, checked where it is written
          } catch (const UserError& err) {
            bad(path, ev, err.what());
          }
        }
        else if (kk == "summary") {
          s.summary = need_string(path, ev, "summary");
          if (s.summary.empty() || s.summary[0] != '/') s.summary = (dir / s.summary).lexically_normal().string();
        } else if (kk == "batch") s.batch = need_int(path, ev, "batch", 1, limits::kMaxBatch);
        else if (kk == "optimizer") {
          s.optimizer = need_string(path, ev, "optimizer");
          try {
            estimate::parse_optimizer(s.optimizer);
          } catch (const UserError& err) {
            bad(path, ev, err.what());
          }
        }
        else if (kk == "seq_len") s.seq_len = need_int(path, ev, "seq_len", 1, limits::kMaxSeqLen);
        else if (kk == "gpu") {
          s.gpu = need_string(path, ev, "gpu");
          try {
            estimate::load_profile(s.gpu);  // the profile, checked where it is named
          } catch (const UserError& err) {
            bad(path, ev, err.what());
          }
        }
        else bad(path, ev, fmt::format("unknown key 'estimate.{}'", kk));
      }
      if (s.summary.empty()) bad(path, node, "'estimate' needs 'summary'");
      if (s.batch == 0) bad(path, node, "'estimate' needs 'batch'");
      jf.estimate = s;
    } else {
      bad(path, node, fmt::format("unknown key '{}'", k));
    }
  }
  if (!have_command) throw UserError(fmt::format("{}:1: missing 'command'", path));
  if (r.mem_mib && jf.estimate) throw UserError(fmt::format("{}:1: give either 'mem' or [estimate], not both", path));
  if (r.workdir.empty()) r.workdir = dir.string();
  return jf;
}

}  // namespace colo::daemon
