#pragma once
// Shared by the fuzz targets (fuzz/<target>_fuzz.cpp) and the regression test that replays
// fuzz/regressions/<target>/* through the same entry functions in the normal (GCC) build.
//
// A target is written as
//   COLO_FUZZ_TARGET(torchsummary) { ... use data, size ...; return 0; }
// Built as a fuzzer (the default), this defines LLVMFuzzerTestOneInput. Built with
// COLO_FUZZ_NO_MAIN (tests/fuzz/), it registers the function under its name instead, so one test
// binary can hold every target.
//
// The contract every parser is held to: on any input it returns normally or throws
// colo::UserError with a non-empty, one-line message. Anything else — another exception type, a
// multi-line or empty message, a crash, a sanitizer report, a hang — is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>

#include "core/error.h"

namespace colo::fuzz {

using EntryFn = int (*)(const std::uint8_t*, std::size_t);

inline std::map<std::string, EntryFn>& registry() {
  static std::map<std::string, EntryFn> r;
  return r;
}
inline bool register_target(const char* name, EntryFn fn) {
  registry()[name] = fn;
  return true;
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Aborts (a finding) when an error message breaks the one-line contract.
inline void check_message(const char* what, const char* target) {
  const std::string_view m(what);
  if (m.empty() || m.find('\n') != std::string_view::npos) {
    std::fprintf(stderr, "colo fuzz [%s]: UserError message is empty or not one line: '%s'\n", target, what);
    std::abort();
  }
}

// A per-process scratch directory on tmpfs when there is one (parsers that only take a path).
// Removed again at normal exit (libFuzzer's -max_total_time ends with exit()).
struct ScratchDir {
  std::string path;
  ScratchDir() {
    const std::string base =
        std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path().string();
    path = base + "/colo-fuzz-" + std::to_string(::getpid());
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};
inline const std::string& scratch_dir() {
  static const ScratchDir dir;
  return dir.path;
}

// Writes the bytes to scratch_dir()/name (replacing it) and returns the path.
inline std::string scratch_file(std::string_view bytes, const std::string& name) {
  const std::string p = scratch_dir() + "/" + name;
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) {
    std::fprintf(stderr, "colo fuzz: cannot write scratch file %s\n", p.c_str());
    std::abort();
  }
  return p;
}

}  // namespace colo::fuzz

// Runs `stmt`; a UserError is the expected outcome for bad input (its message must be one line).
#define COLO_FUZZ_EXPECT_USER_ERROR(target, stmt)              \
  do {                                                         \
    try {                                                      \
      stmt;                                                    \
    } catch (const ::colo::UserError& e) {                     \
      ::colo::fuzz::check_message(e.what(), target);           \
    }                                                          \
  } while (0)

#ifdef COLO_FUZZ_NO_MAIN
#define COLO_FUZZ_TARGET(name)                                                                     \
  static int colo_fuzz_##name(const std::uint8_t* data, std::size_t size);                         \
  [[maybe_unused]] static const bool colo_fuzz_registered_##name =                                 \
      ::colo::fuzz::register_target(#name, colo_fuzz_##name);                                      \
  static int colo_fuzz_##name(const std::uint8_t* data, std::size_t size)
#else
#define COLO_FUZZ_TARGET(name)                                                                     \
  static int colo_fuzz_##name(const std::uint8_t* data, std::size_t size);                         \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {             \
    return colo_fuzz_##name(data, size);                                                           \
  }                                                                                                \
  static int colo_fuzz_##name(const std::uint8_t* data, std::size_t size)
#endif
