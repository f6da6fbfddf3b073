#include "sim/sim_model.h"

#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "common/resource_path.h"
#include "core/error.h"
#include "core/one_line.h"

namespace colo::sim {

namespace {

struct Reader {
  std::string path;
  [[noreturn]] void bad(const toml::node& n, const std::string& msg) const {
    throw UserError(fmt::format("{}:{}: {}", path, n.source().begin.line, msg));
  }
  const toml::table& table(const toml::node& n, const std::string& key) const {
    if (!n.is_table()) bad(n, fmt::format("'{}' must be a table", key));
    return *n.as_table();
  }
  // { value = X, source = "..." } with X in [lo, hi].
  double param(const toml::node& n, const std::string& key, double lo, double hi, SimModel& m) const {
    const toml::table& t = table(n, key);
    const toml::node* v = t.get("value");
    const toml::node* s = t.get("source");
    if (!v) bad(n, fmt::format("'{}' has no value", key));
    if (!s || !s->is_string() || s->as_string()->get().empty())
      bad(n, fmt::format("'{}' has no source (a thesis table, a data set, a data sheet or \"assumption: why\")", key));
    for (const auto& [k, x] : t)
      if (k.str() != "value" && k.str() != "source") bad(x, fmt::format("'{}.{}': only value and source", key, k.str()));
    double d = 0;
    if (v->is_integer()) d = static_cast<double>(v->as_integer()->get());
    else if (v->is_floating_point()) d = v->as_floating_point()->get();
    else bad(*v, fmt::format("'{}.value' must be a number", key));
    if (!(d >= lo && d <= hi)) bad(*v, fmt::format("'{}.value' must be in [{}, {}], got {}", key, lo, hi, d));
    m.sources[key] = s->as_string()->get();
    return d;
  }
};

}  // namespace

SimModel load_sim_model(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw UserError(fmt::format("{}: no such model file", path));
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw UserError(one_line(fmt::format("{}:{}:{}: {}", path, b.line, b.column, e.description())));
  }
  const Reader r{path};
  SimModel m;
  m.smact.clear();
  std::set<std::string> seen;
  for (const auto& [sk, node] : t) {
    const std::string section(sk.str());
    if (section == "format") {
      if (!node.is_string() || node.as_string()->get() != "colo-sim-model 1")
        r.bad(node, "format must be \"colo-sim-model 1\"");
      seen.insert(section);
      continue;
    }
    const toml::table& s = r.table(node, section);
    if (section == "smact") {
      for (const auto& [ck, cn] : s) {
        const std::string cls(ck.str());
        const toml::table& c = r.table(cn, "smact." + cls);
        SmActivityClass row;
        bool a = false, b = false;
        for (const auto& [k, n] : c) {
          const std::string key = "smact." + cls + "." + std::string(k.str());
          if (k.str() == "at_batch_32") row.at_batch_32 = r.param(n, key, 0, 1, m), a = true;
          else if (k.str() == "per_doubling") row.per_doubling = r.param(n, key, -1, 1, m), b = true;
          else r.bad(n, fmt::format("unknown parameter '{}'", key));
        }
        if (!a || !b) r.bad(cn, fmt::format("'smact.{}' needs at_batch_32 and per_doubling", cls));
        m.smact[cls] = row;
      }
      seen.insert(section);
      continue;
    }
    for (const auto& [k, n] : s) {
      const std::string key = section + "." + std::string(k.str());
      if (key == "mps.interference") m.mps.interference = r.param(n, key, 0, 10, m);
      else if (key == "streams.busy_floor") m.streams.busy_floor = r.param(n, key, 0, 1, m);
      else if (key == "streams.switch_overhead") m.streams.switch_overhead = r.param(n, key, 0, 10, m);
      else if (key == "power.idle_watts") m.power.idle_watts = r.param(n, key, 0, 10000, m);
      else if (key == "power.busy_watts") m.power.busy_watts = r.param(n, key, 0, 10000, m);
      else if (key == "power.max_watts") m.power.max_watts = r.param(n, key, 0, 10000, m);
      else if (key == "timing.ramp_s") m.ramp_s = r.param(n, key, 0, 86400, m);
      else if (key == "timing.oom_detect_s") m.oom_detect_s = r.param(n, key, 0, 86400, m);
      else r.bad(n, fmt::format("unknown parameter '{}'", key));
      seen.insert(key);
    }
  }
  for (const char* need : {"format", "mps.interference", "streams.busy_floor", "streams.switch_overhead",
                           "power.idle_watts", "power.busy_watts", "power.max_watts", "timing.ramp_s",
                           "timing.oom_detect_s", "smact"})
    if (!seen.count(need)) throw UserError(fmt::format("{}: missing '{}' (every parameter is stated, with its source)", path, need));
  if (!(m.power.idle_watts <= m.power.busy_watts && m.power.busy_watts <= m.power.max_watts))
    throw UserError(fmt::format("{}: power must satisfy idle_watts ≤ busy_watts ≤ max_watts", path));
  return m;
}

std::string default_sim_model_path() { return resource_path(nullptr, "models", "sim/a100-thesis.toml"); }

}  // namespace colo::sim
