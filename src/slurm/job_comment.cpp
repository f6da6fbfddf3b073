#include "slurm/job_comment.h"

#include <regex>

#include <fmt/format.h>

#include "core/error.h"
#include "core/limits.h"
#include "core/parse_number.h"

namespace colo::slurm {

namespace {

// Values are kept to characters that cannot end the record or confuse a parser.
std::string token(const std::string& s) {
  std::string out;
  for (char c : s)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == ':') ? c : '_';
  return out;
}

}  // namespace

std::string format_comment(const JobComment& c, const std::string& user_comment) {
  std::string s = "colo:";
  if (c.mem_mib > 0) s += fmt::format("mem_mib={}", c.mem_mib);  // first: job_submit.lua looks for "colo:mem_mib="
  if (!c.estimator.empty()) s += (s.size() > 5 ? ",est=" : "est=") + token(c.estimator);
  if (!c.fingerprint.empty()) s += (s.size() > 5 ? ",fp=" : "fp=") + token(c.fingerprint);
  if (!user_comment.empty()) s += " " + user_comment;
  return s;
}

std::optional<JobComment> parse_comment(const std::string& comment) {
  const size_t at = comment.find("colo:");
  if (at == std::string::npos || (at > 0 && comment[at - 1] != ' ')) return std::nullopt;
  const size_t end = comment.find(' ', at);
  const std::string rec = comment.substr(at + 5, end == std::string::npos ? std::string::npos : end - at - 5);
  JobComment c;
  size_t start = 0;
  while (start < rec.size()) {
    size_t comma = rec.find(',', start);
    if (comma == std::string::npos) comma = rec.size();
    const std::string kv = rec.substr(start, comma - start);
    start = comma + 1;
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) return std::nullopt;
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "mem_mib") {
      try {
        c.mem_mib = parse_integer(v, "comment mem_mib", 1, limits::kMaxGpuMiB);
      } catch (const UserError&) {
        return std::nullopt;
      }
    } else if (k == "est") {
      // The comment is the user's to write: only what colo writes is taken, bounded, so the
      // recovery agent never copies unbounded or control text into its state and log.
      static const std::regex est(R"([A-Za-z0-9_:.()-]{1,40})");
      if (!std::regex_match(v, est)) return std::nullopt;
      c.estimator = v;
    } else if (k == "fp") {
      static const std::regex fp(R"(u[0-9]{1,10}-[0-9a-f]{1,16})");  // job_fingerprint's u<uid>-<hex>
      if (!std::regex_match(v, fp)) return std::nullopt;
      c.fingerprint = v;
    }
  }
  if (c.mem_mib == 0 && c.fingerprint.empty() && c.estimator.empty()) return std::nullopt;
  return c;
}

}  // namespace colo::slurm
