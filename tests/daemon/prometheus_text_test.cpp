// The Prometheus text writer: escaping, value forms, cumulative histograms, and the rules that
// keep an exposition valid (one block per family, counters named *_total).
#include <cmath>
#include <limits>
#include <stdexcept>

#include <gtest/gtest.h>

#include "daemon/prometheus_text.h"

namespace colo::daemon {
namespace {

TEST(PrometheusText, FamilyHeaderAndEscapedLabels) {
  PrometheusText m;
  m.family("colo_x", "gauge", "line one\nback\\slash");
  m.sample({{"name", "a\"b\\c\nd"}}, 1.5);
  EXPECT_EQ(m.str(),
            "# HELP colo_x line one\\nback\\\\slash\n# TYPE colo_x gauge\n"
            "colo_x{name=\"a\\\"b\\\\c\\nd\"} 1.5\n");
}

TEST(PrometheusText, ValueForms) {
  EXPECT_EQ(PrometheusText::format_value(3), "3");
  EXPECT_EQ(PrometheusText::format_value(-0.25), "-0.25");
  EXPECT_EQ(PrometheusText::format_value(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(PrometheusText::format_value(INFINITY), "+Inf");
  EXPECT_EQ(PrometheusText::format_value(-INFINITY), "-Inf");
  EXPECT_EQ(PrometheusText::format_value(1e20), "1e+20");  // no integer overflow
}

TEST(PrometheusText, HistogramIsCumulativeWithInclusiveBounds) {
  Histogram h({0, 1});
  for (double v : {-1.0, 0.0, 0.5, 1.0, 7.0}) h.observe(v);
  h.observe(std::numeric_limits<double>::quiet_NaN());  // ignored
  PrometheusText m;
  m.family("colo_h", "histogram", "h");
  m.histogram({{"estimator", "user"}}, h);
  EXPECT_EQ(m.str(),
            "# HELP colo_h h\n# TYPE colo_h histogram\n"
            "colo_h_bucket{estimator=\"user\",le=\"0\"} 2\n"
            "colo_h_bucket{estimator=\"user\",le=\"1\"} 4\n"
            "colo_h_bucket{estimator=\"user\",le=\"+Inf\"} 5\n"
            "colo_h_sum{estimator=\"user\"} 7.5\n"
            "colo_h_count{estimator=\"user\"} 5\n");
}

TEST(PrometheusText, RulesThatKeepTheExpositionValid) {
  PrometheusText m;
  EXPECT_THROW(m.family("colo_requests", "counter", "x"), std::logic_error);  // counters end in _total
  EXPECT_THROW(m.family("9bad", "gauge", "x"), std::logic_error);
  EXPECT_THROW(m.sample({}, 1), std::logic_error);  // no family yet
  m.family("colo_ok", "gauge", "x");
  EXPECT_THROW(m.family("colo_ok", "gauge", "x"), std::logic_error);  // one block per family
  EXPECT_THROW(m.sample({{"__reserved", "v"}}, 1), std::logic_error);
  EXPECT_THROW(m.sample({{"bad-name", "v"}}, 1), std::logic_error);
  EXPECT_THROW(Histogram({2, 1}), std::logic_error);
}

}  // namespace
}  // namespace colo::daemon
