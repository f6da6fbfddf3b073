// A pre-recorded trace library's index (src/estimate/trace/trace_library.cpp): DIR/index.jsonl,
// one JSON object per data-set row, read by `colo estimate eval|calibrate --traces DIR`.
#include <filesystem>

#include "estimate/trace/trace_library.h"
#include "fuzz_common.h"

COLO_FUZZ_TARGET(trace_index) {
  const std::string dir = colo::fuzz::scratch_dir() + "/traces";
  std::filesystem::create_directories(dir);
  (void)colo::fuzz::scratch_file(colo::fuzz::as_text(data, size), "traces/index.jsonl");
  COLO_FUZZ_EXPECT_USER_ERROR("trace_index", {
    const colo::estimate::TraceLibrary lib(dir);
    (void)lib.find("0");
  });
  return 0;
}
