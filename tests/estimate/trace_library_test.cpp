// Pre-recorded probe traces for a data set (estimate/trace/trace_library.h) and the trace
// estimator's fit on them (estimate/calibration/trace_fit.h), on small hand-written traces.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "core/error.h"
#include "estimate/calibration/trace_fit.h"
#include "estimate/evaluation/evaluation.h"
#include "estimate/trace/trace_library.h"
#include "estimate/trace/trace_replay.h"

namespace colo::estimate {
namespace {

namespace fs = std::filesystem;

// One parameter and one activation of `mib` MiB, freed after the step.
std::string trace_of(int mib) {
  return "colo-probe-trace 1\nH {\"model\":\"t\",\"batch\":4}\nM 1 1048576 0 load param\nM 2 " +
         std::to_string(static_cast<long long>(mib) << 20) + " 0 forward addmm\nF 2\nS 1\nE {}\n";
}

struct Lib {
  fs::path dir;
  explicit Lib(const std::string& index) {
    dir = fs::temp_directory_path() / ("colo-tracelib-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    fs::create_directories(dir);
    std::ofstream(dir / "index.jsonl") << index;
  }
  ~Lib() { fs::remove_all(dir); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(dir / name) << text; }
};

std::string index_error(const std::string& index) {
  Lib l(index);
  try {
    TraceLibrary t(l.dir.string());
  } catch (const UserError& e) {
    return std::string(e.what()).substr(l.dir.string().size());
  }
  return "(accepted)";
}

TEST(TraceLibrary, FindsRowsByFilenameAndKeepsTheSkipReasons) {
  Lib l("{\"row\":0,\"filename\":\"a.out\",\"status\":\"ok\",\"trace\":\"0.trace\"}\n"
        "{\"row\":1,\"filename\":\"b.out\",\"status\":\"skipped\",\"reason\":\"conv params 10 != 12\"}\n\n");
  l.write("0.trace", trace_of(100));
  const TraceLibrary t(l.dir.string());
  EXPECT_EQ(t.size(), 2u);
  ASSERT_NE(t.find("a.out"), nullptr);
  EXPECT_EQ(t.find("b.out")->reason, "conv params 10 != 12");
  EXPECT_EQ(t.find("c.out"), nullptr);
  const auto tr = t.load(*t.find("a.out"));
  EXPECT_EQ(tr->storages, 2u);
  EXPECT_EQ(t.load(*t.find("a.out")).get(), tr.get());  // loaded once
}

TEST(TraceLibrary, MalformedIndexLinesNameTheirLine) {
  EXPECT_EQ(index_error("{\"filename\":\"a\",\"status\":\"ok\"}\n"), "/index.jsonl:1: status ok without a trace file");
  EXPECT_EQ(index_error("\n{\"filename\":\"a\",\"status\":\"ok\",\"trace\":\"../x\"}\n"),
            "/index.jsonl:2: trace must be a file name in the directory");
  EXPECT_EQ(index_error("[1]\n"), "/index.jsonl:1: expected a JSON object with filename and status");
  EXPECT_EQ(index_error("{\"filename\":\"a\",\"status\":\"maybe\"}\n"), "/index.jsonl:1: unknown status 'maybe'");
  EXPECT_EQ(index_error("not json\n"), "/index.jsonl:1: expected a JSON object with filename and status");
}

// Rows whose measurement is their replayed peak (+ 3 % for one row) + the profile's context +
// 100 MiB. Allowed to leave one row under, the fit finds the 100 MiB offset and no margin; allowed
// none, it covers the odd row too (by a larger offset or a margin, whichever errs less), and
// every row's estimate is then at least its measurement.
TEST(TraceFit, FindsTheContextOffsetAndCoversTheRowsTheUnderTargetRequires) {
  std::string index;
  std::vector<DatasetRow> rows;
  std::vector<double> peaks;
  CalibrationProfile base;
  base.context_mib = 1000;
  for (int i = 0; i < 20; ++i) {
    const int mib = 200 + 50 * i;
    index += "{\"filename\":\"r" + std::to_string(i) + "\",\"status\":\"ok\",\"trace\":\"" + std::to_string(i) + ".trace\"}\n";
    DatasetRow r;
    r.id = "r" + std::to_string(i);
    const auto t = parse_probe_trace(trace_of(mib), "t");
    peaks.push_back(static_cast<double>(replay_probe_trace(t, TraceReplayOptions::from_profile(base)).reserved_peak) / 1048576.0);
    r.measured = static_cast<MiB>(std::lround(peaks.back() * (i == 7 ? 1.03 : 1.0) + 1000 + 100));
    rows.push_back(r);
  }
  Lib l(index);
  for (int i = 0; i < 20; ++i) l.write(std::to_string(i) + ".trace", trace_of(200 + 50 * i));
  const TraceLibrary lib(l.dir.string());
  TraceFitOptions o;
  o.cnn = false;
  o.max_under_rate = 0.05;  // one row of 20 may stay under
  auto fit = fit_trace_profile(rows, lib, base, o);
  EXPECT_NEAR(fit.profile.trace_context_offset_mib, 100, 1);
  EXPECT_EQ(fit.profile.trace_safety_margin, 0.0);
  o.max_under_rate = 0.0;
  fit = fit_trace_profile(rows, lib, base, o);
  EXPECT_EQ(fit.report["chosen"]["under_rate"].get<double>(), 0.0);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double est = std::ceil(peaks[i] * (1 + fit.profile.trace_safety_margin) + 1000 + fit.profile.trace_context_offset_mib);
    EXPECT_GE(est, static_cast<double>(*rows[i].measured)) << "row " << i;
  }
  EXPECT_LT(fit.report["chosen"]["median_abs_rel_err"].get<double>(), 0.02);
  EXPECT_THROW(fit_trace_profile({}, lib, base, o), UserError);
}

}  // namespace
}  // namespace colo::estimate
