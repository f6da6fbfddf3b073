#include "sim/models/sim_model.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "common/resource_path.h"
#include "core/error.h"
#include "core/one_line.h"
#include "daemon/client/toml_reader.h"

namespace colo::sim {

namespace {

// { value = X, source = "..." } with X in [lo, hi]; the source is recorded under `key`.
double param(const daemon::TomlReader& r, const toml::node& n, const std::string& key, double lo, double hi, SimModel& m) {
  const toml::table& t = r.table(n, key);
  const toml::node* v = t.get("value");
  const toml::node* s = t.get("source");
  if (!v) r.bad(n, fmt::format("'{}' has no value", key));
  if (!s || !s->is_string() || s->as_string()->get().empty())
    r.bad(n, fmt::format("'{}' has no source (a thesis table, a data set, a data sheet or \"assumption: why\")", key));
  for (const auto& [k, x] : t)
    if (k.str() != "value" && k.str() != "source") r.bad(x, fmt::format("'{}.{}': only value and source", key, k.str()));
  if (!v->is_number()) r.bad(*v, fmt::format("'{}.value' must be a number", key));
  const double d = v->is_integer() ? static_cast<double>(v->as_integer()->get()) : v->as_floating_point()->get();
  if (!(d >= lo && d <= hi)) r.bad(*v, fmt::format("'{}.value' must be in [{}, {}], got {}", key, lo, hi, d));
  m.sources[key] = s->as_string()->get();
  return d;
}

// Every scalar parameter once: its key, where it goes, its range (all are required). Read and
// written from this one table.
struct Scalar {
  const char* key;
  double* value;
  double lo, hi;
};
std::array<Scalar, 16> scalar_params(SimModel& m) {
  return {{
    {"mps.interference", &m.mps.interference, 0, 10},
    {"streams.busy_floor", &m.streams.busy_floor, 0, 1},
    {"streams.switch_overhead", &m.streams.switch_overhead, 0, 10},
    {"streams.slice_wait", &m.streams.slice_wait, 0, 10},
    {"power.idle_watts", &m.power.idle_watts, 0, 10000},
    {"power.busy_watts", &m.power.busy_watts, 0, 10000},
    {"power.max_watts", &m.power.max_watts, 0, 10000},
    {"timing.ramp_s", &m.ramp_s, 0, 86400},
    {"timing.oom_detect_s", &m.oom_detect_s, 0, 86400},
    {"mig.capacity_1g", &m.mig.capacity_1g, 0.001, 1},
    {"mig.capacity_2g", &m.mig.capacity_2g, 0.001, 1},
    {"mig.capacity_3g", &m.mig.capacity_3g, 0.001, 1},
    {"mig.capacity_4g", &m.mig.capacity_4g, 0.001, 1},
    {"mig.capacity_7g", &m.mig.capacity_7g, 0.001, 1},
    {"checkpoint.save_s", &m.checkpoint.save_s, 0, 86400},
    {"checkpoint.restore_s", &m.checkpoint.restore_s, 0, 86400},
  }};
}

}  // namespace

SimModel load_sim_model(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw UserError(fmt::format("{}: {}", path, std::filesystem::is_directory(path, ec) ? "is a directory, not a model file"
                                                                                        : "no such model file"));
  const toml::table t = daemon::parse_toml_file(path);
  const daemon::TomlReader r{path};
  SimModel m;
  m.smact.clear();
  const auto scalars = scalar_params(m);
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
        // The classes the catalog maps data sets to (sm_activity.cpp); another name would be
        // read and never used, and a missing one would fail later, blamed on the catalog.
        if (!default_sm_activity_table().count(cls)) {
          std::string known;
          for (const auto& [name, row] : default_sm_activity_table()) known += (known.empty() ? "" : ", ") + name;
          r.bad(cn, fmt::format("unknown SM-activity class 'smact.{}' (the classes are {})", cls, known));
        }
        const toml::table& c = r.table(cn, "smact." + cls);
        SmActivityClass row;
        bool a = false, b = false;
        for (const auto& [k, n] : c) {
          const std::string key = "smact." + cls + "." + std::string(k.str());
          if (k.str() == "at_batch_32") row.at_batch_32 = param(r, n, key, 0, 1, m), a = true;
          else if (k.str() == "per_doubling") row.per_doubling = param(r, n, key, -1, 1, m), b = true;
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
      const auto* p = std::find_if(scalars.begin(), scalars.end(), [&](const Scalar& x) { return key == x.key; });
      if (p == scalars.end()) r.bad(n, fmt::format("unknown parameter '{}'", key));
      *p->value = param(r, n, key, p->lo, p->hi, m);
      seen.insert(key);
    }
  }
  for (const Scalar& x : scalars)
    if (!seen.count(x.key)) throw UserError(fmt::format("{}: missing '{}' (every parameter is stated, with its source)", path, x.key));
  for (const char* need : {"format", "smact"})
    if (!seen.count(need)) throw UserError(fmt::format("{}: missing '{}' (every parameter is stated, with its source)", path, need));
  for (const auto& [cls, row] : default_sm_activity_table())
    if (!m.smact.count(cls))
      throw UserError(fmt::format("{}: missing 'smact.{}' (every parameter is stated, with its source)", path, cls));
  if (!(m.power.idle_watts <= m.power.busy_watts && m.power.busy_watts <= m.power.max_watts))
    throw UserError(fmt::format("{}: power must satisfy idle_watts ≤ busy_watts ≤ max_watts", path));
  return m;
}

std::string write_sim_model(SimModel m, const std::string& comment) {
  // Laid out as the shipped file (one line per parameter, sections in its order); values in
  // their shortest exact form, sources quoted and escaped by toml++.
  auto entry = [&](const std::string& key, double value) {
    const auto src = m.sources.find(key);
    if (src == m.sources.end() || src->second.empty())
      throw std::logic_error(fmt::format("write_sim_model: '{}' has no source", key));
    std::ostringstream quoted;
    quoted << toml::value<std::string>(src->second);
    return fmt::format("{} = {{ value = {}, source = {} }}\n", key.substr(key.rfind('.') + 1), value, quoted.str());
  };
  std::ostringstream out;
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) out << "# " << one_line(line) << "\n";
  out << "format = \"colo-sim-model 1\"\n";
  std::string section;
  for (const Scalar& x : scalar_params(m)) {
    const std::string key = x.key;
    if (const std::string sec = key.substr(0, key.find('.')); sec != section) {
      section = sec;
      out << "\n[" << section << "]\n";
    }
    out << entry(key, *x.value);
  }
  // A class name that is not a bare TOML key is written quoted; an empty table is still written
  // (the reader requires the section).
  auto key_text = [](const std::string& k) {
    const bool bare = !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    });
    if (bare) return k;
    std::ostringstream q;
    q << toml::value<std::string>(k);
    return q.str();
  };
  if (m.smact.empty()) out << "\n[smact]\n";
  for (const auto& [cls, row] : m.smact) {
    out << "\n[smact." << key_text(cls) << "]\n";
    out << entry("smact." + cls + ".at_batch_32", row.at_batch_32) << entry("smact." + cls + ".per_doubling", row.per_doubling);
  }
  return out.str();
}

std::string default_sim_model_path() { return resource_path(nullptr, "models", "sim/a100-thesis.toml"); }

}  // namespace colo::sim
