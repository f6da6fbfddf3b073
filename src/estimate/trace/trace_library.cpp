#include "estimate/trace/trace_library.h"

#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/one_line.h"

namespace colo::estimate {

TraceLibrary::TraceLibrary(const std::string& dir) : dir_(dir) {
  const std::string index = dir + "/index.jsonl";
  std::ifstream in(index);
  if (!in) throw UserError(fmt::format("{}: cannot open (record traces with PYTHONPATH=python /usr/bin/python3 -m colo_probe.gpumemnet)", index));
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    const std::string where = fmt::format("{}:{}", index, n);
    if (j.is_discarded() || !j.is_object() || !j.contains("filename") || !j.at("filename").is_string() ||
        !j.contains("status") || !j.at("status").is_string())
      throw UserError(where + ": expected a JSON object with filename and status");
    Entry e;
    const std::string status = j.at("status").get<std::string>();
    if (status == "ok") {
      if (!j.contains("trace") || !j.at("trace").is_string()) throw UserError(where + ": status ok without a trace file");
      const std::string t = j.at("trace").get<std::string>();
      if (t.empty() || t.find('/') != std::string::npos) throw UserError(where + ": trace must be a file name in the directory");
      e.trace_path = dir + "/" + t;
    } else if (status == "skipped") {
      e.reason = j.contains("reason") && j.at("reason").is_string() ? one_line(j.at("reason").get<std::string>())
                                                                   : std::string("not probed");
    } else {
      throw UserError(fmt::format("{}: unknown status '{}'", where, one_line(status)));
    }
    entries_[j.at("filename").get<std::string>()] = std::move(e);  // the last record of a row wins
  }
}

const TraceLibrary::Entry* TraceLibrary::find(const std::string& id) const {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : &it->second;
}

std::shared_ptr<const ProbeTrace> TraceLibrary::load(const Entry& e) const {
  auto it = cache_.find(e.trace_path);
  if (it != cache_.end()) return it->second;
  auto t = std::make_shared<const ProbeTrace>(load_probe_trace(e.trace_path));
  cache_[e.trace_path] = t;
  return t;
}

}  // namespace colo::estimate
