#include "daemon/prometheus_text.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace colo::daemon {

namespace {

bool valid_name(std::string_view n, bool label) {
  if (n.empty()) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!label && c == ':');
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return !(label && n.size() >= 2 && n[0] == '_' && n[1] == '_');  // __* is reserved
}

std::string escape_help(std::string_view v) {
  std::string o;
  for (char c : v) {
    if (c == '\\') o += "\\\\";
    else if (c == '\n') o += "\\n";
    else o += c;
  }
  return o;
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds) : bounds(std::move(upper_bounds)), counts(bounds.size() + 1, 0) {
  if (!std::is_sorted(bounds.begin(), bounds.end())) throw std::logic_error("histogram bounds must ascend");
}

void Histogram::observe(double v) {
  if (std::isnan(v)) return;
  const auto it = std::lower_bound(bounds.begin(), bounds.end(), v);  // first bound >= v: le is inclusive
  ++counts[static_cast<size_t>(it - bounds.begin())];
  sum += v;
  ++count;
}

std::string PrometheusText::escape_label(std::string_view v) {
  std::string o;
  for (char c : v) {
    if (c == '\\') o += "\\\\";
    else if (c == '"') o += "\\\"";
    else if (c == '\n') o += "\\n";
    else o += c;
  }
  return o;
}

std::string PrometheusText::format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 9e15) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{}", v);  // shortest round-trip form
}

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
  if (!valid_name(name, false)) throw std::logic_error(fmt::format("bad metric name '{}'", name));
  if (type != "gauge" && type != "counter" && type != "histogram") throw std::logic_error("bad metric type");
  if (type == "counter" && !name.ends_with("_total")) throw std::logic_error(fmt::format("counter '{}' must end in _total", name));
  if (std::find(seen_.begin(), seen_.end(), name) != seen_.end())
    throw std::logic_error(fmt::format("metric family '{}' written twice", name));
  seen_.emplace_back(name);
  current_ = name;
  type_ = type;
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, escape_help(help), name, type);
}

void PrometheusText::line(std::string_view name, const MetricLabels& labels, double value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
      if (!valid_name(k, true)) throw std::logic_error(fmt::format("bad label name '{}'", k));
      if (!first) out_ += ',';
      first = false;
      out_ += fmt::format("{}=\"{}\"", k, escape_label(v));
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += format_value(value);
  out_ += '\n';
}

void PrometheusText::sample(const MetricLabels& labels, double value) {
  if (current_.empty() || type_ == "histogram") throw std::logic_error("sample() outside a gauge/counter family");
  line(current_, labels, value);
}

void PrometheusText::histogram(const MetricLabels& labels, const Histogram& h) {
  if (type_ != "histogram") throw std::logic_error("histogram() outside a histogram family");
  std::uint64_t cumulative = 0;
  for (size_t i = 0; i <= h.bounds.size(); ++i) {
    cumulative += h.counts[i];
    MetricLabels l = labels;
    l.emplace_back("le", i < h.bounds.size() ? format_value(h.bounds[i]) : std::string("+Inf"));
    line(current_ + "_bucket", l, static_cast<double>(cumulative));
  }
  line(current_ + "_sum", labels, h.sum);
  line(current_ + "_count", labels, static_cast<double>(h.count));
}

}  // namespace colo::daemon
