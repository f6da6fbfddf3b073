#pragma once
// Prometheus' text exposition format (version 0.0.4), the part colod writes: families with
// # HELP and # TYPE, samples with escaped label values, and cumulative histograms. Each family
// is written once, its samples together, as the format requires (promtool checks it in CI).
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace colo::daemon {

inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// A histogram's state: `bounds` are the upper bounds (ascending, +Inf implied).
struct Histogram {
  std::vector<double> bounds;
  std::vector<std::uint64_t> counts;  // per bucket, not cumulative; counts.size() == bounds.size() + 1
  double sum = 0;
  std::uint64_t count = 0;

  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double v);
};

class PrometheusText {
 public:
  // Starts a family (type: gauge, counter, histogram). Throws std::logic_error on a bad name, a
  // repeated family or a counter not named *_total: those are bugs, not input.
  void family(std::string_view name, std::string_view type, std::string_view help);
  // A sample of the current family (histograms: use histogram()).
  void sample(const MetricLabels& labels, double value);
  void histogram(const MetricLabels& labels, const Histogram& h);
  const std::string& str() const { return out_; }

  static std::string escape_label(std::string_view v);
  static std::string format_value(double v);

 private:
  void line(std::string_view name, const MetricLabels& labels, double value);

  std::string out_;
  std::string current_;
  std::string type_;
  std::vector<std::string> seen_;
};

}  // namespace colo::daemon
