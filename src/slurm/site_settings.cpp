#include "slurm/site_settings.h"

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "core/error.h"
#include "core/one_line.h"
#include "daemon/client/toml_reader.h"

namespace colo::slurm {

namespace {

// A TOML basic string: quotes, backslashes and control characters escaped (what the reader
// refuses unescaped), so every path written reads back as it was.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20 || u == 0x7f) out += fmt::format("\\u{:04X}", u);
    else out += c;
  }
  return out + "\"";
}

}  // namespace

std::string SiteSettings::to_toml() const {
  return fmt::format(
      "# colo's Slurm settings (written by `colo slurm conf`; read by colo sbatch, colo run,\n"
      "# colo slurm recover and colo slurm task-prolog). See docs/SLURM.md.\n"
      "shard_mib = {}        # one gres/shard is this much GPU memory\n"
      "shards_per_gpu = {}   # shards of the smallest GPU\n"
      "margin = {}           # added to an estimate before it becomes shards\n"
      "default_shards = {}   # a shard request without a size (0 = a quarter of a GPU)\n"
      "oversize = {}   # more shards than one GPU has: \"whole_gpu\" or \"reject\"\n"
      "hold_exit_code = {}   # slurm.conf RequeueExitHold\n"
      "state_dir = {}\n"
      "step_mib = {}         # loose recovery: each OOM adds this much\n"
      "max_retries = {}\n"
      "mps = {}\n"
      "smact_cap = {}        # node weights: a GPU at or above this SM activity has no headroom\n"
      "nvml_library = {}\n"
      "fake_gpus = {}\n"
      "fake_gpu_dir = {}\n"
      "sample_seconds = {}\n",
      shard_mib, shards_per_gpu, margin, default_shards, quoted(oversize), hold_exit_code, quoted(state_dir), step_mib,
      max_retries, mps ? "true" : "false", smact_cap, quoted(nvml_library), quoted(fake_gpus), quoted(fake_gpu_dir), sample_seconds);
}

std::string hold_exit_code_problem(int code) {
  if (code < 3 || code > 125)
    return fmt::format("{} is what ordinary failures exit with (1: most errors, 2: colo run's own and usage errors, "
                       "126/127: cannot run, 128+N: killed by signal N); pick one in 3..125, e.g. 75", code);
  return {};
}

SiteSettings load_site_settings(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw UserError(fmt::format("{}: no colo Slurm settings file here (write one with `colo slurm conf`, or give --site FILE)", path));
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw UserError(fmt::format("{}:{}: {}", path, e.source().begin.line, one_line(std::string(e.description()))));
  }
  const daemon::TomlReader r{path};
  SiteSettings s;
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    if (key == "shard_mib") s.shard_mib = r.memory(v, key, 1);
    else if (key == "shards_per_gpu") s.shards_per_gpu = static_cast<int>(r.integer(v, key, 1, 1024));
    else if (key == "margin") s.margin = r.number(v, key, 0, 10);
    else if (key == "default_shards") s.default_shards = static_cast<int>(r.integer(v, key, 0, 1024));
    else if (key == "oversize") {
      s.oversize = r.str(v, key);
      if (s.oversize != "whole_gpu" && s.oversize != "reject") r.bad(v, "'oversize' must be \"whole_gpu\" or \"reject\"");
    } else if (key == "hold_exit_code") {
      s.hold_exit_code = static_cast<int>(r.integer(v, key, 1, 255));
      if (const std::string why = hold_exit_code_problem(s.hold_exit_code); !why.empty()) r.bad(v, "'hold_exit_code': " + why);
    }
    else if (key == "state_dir") {
      s.state_dir = r.str(v, key);
      if (s.state_dir.empty() || s.state_dir.front() != '/') r.bad(v, "'state_dir' must be an absolute path");
    }
    else if (key == "step_mib") s.step_mib = r.memory(v, key, 1);
    else if (key == "max_retries") s.max_retries = static_cast<int>(r.integer(v, key, 0, 100));
    else if (key == "mps") s.mps = r.boolean(v, key);
    else if (key == "smact_cap") s.smact_cap = r.number(v, key, 0.01, 1.0);
    else if (key == "nvml_library") s.nvml_library = r.str(v, key);
    else if (key == "fake_gpus") s.fake_gpus = r.str(v, key);
    else if (key == "fake_gpu_dir") s.fake_gpu_dir = r.str(v, key);
    else if (key == "sample_seconds") s.sample_seconds = r.number(v, key, 0.05, 3600);
    else r.bad(v, fmt::format("unknown setting '{}'", one_line(key)));
  }
  if (s.shards_per_gpu == 0) throw UserError(fmt::format("{}: 'shards_per_gpu' is missing", path));
  if (s.default_shards > s.shards_per_gpu)
    throw UserError(fmt::format("{}: 'default_shards' ({}) is more than one GPU's {} shards", path, s.default_shards, s.shards_per_gpu));
  if (s.state_dir.empty() || s.state_dir.front() != '/') throw UserError(fmt::format("{}: 'state_dir' must be an absolute path", path));
  if (!s.fake_gpus.empty() && s.fake_gpu_dir.empty()) throw UserError(fmt::format("{}: 'fake_gpus' needs 'fake_gpu_dir'", path));
  return s;
}

std::string site_settings_path(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* e = std::getenv("COLO_SLURM_SITE"); e && *e) return e;
  return "/etc/colo/slurm.toml";
}

}  // namespace colo::slurm
