// Wiring for the in-tree fake NVML: paths of the built artefacts and the environment.
#include "gpu/fake_nvml_env.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "gpu/nvml_backend.h"

#ifndef COLO_FAKE_NVML_LIBRARY
#error "COLO_FAKE_NVML_LIBRARY must name the built fake NVML library (src/gpu/CMakeLists.txt)"
#endif
#ifndef COLO_FAKE_JOB
#error "COLO_FAKE_JOB must name the built colo-fake-job program (src/gpu/CMakeLists.txt)"
#endif

namespace colo::gpu {

namespace {
// An installed (or unpacked) package has its own copy in <prefix>/lib/colo beside <prefix>/bin;
// a build tree uses the built file.
std::string installed_or_built(const char* name, const char* built) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && exe.has_parent_path()) {
    const auto p = exe.parent_path().parent_path() / "lib" / "colo" / name;
    if (std::filesystem::exists(p, ec)) return p.string();
  }
  return built;
}
}  // namespace

std::string fake_nvml_library_path() { return installed_or_built("libcolo-fake-nvml.so.1", COLO_FAKE_NVML_LIBRARY); }
std::string fake_job_path() { return installed_or_built("colo-fake-job", COLO_FAKE_JOB); }
std::string fake_dcgm_library_path() { return installed_or_built("libcolo-fake-dcgm.so.1", COLO_FAKE_DCGM_LIBRARY); }

FakeNvmlSetup configure_fake_nvml_env(std::string_view spec, const std::string& state_dir) {
  parse_fake_gpu_spec(spec);  // throws UserError with the problem
  if (state_dir.empty()) throw UserError("fake NVML state directory is empty");
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::absolute(state_dir, ec);
  if (ec) throw UserError("fake NVML state directory '" + state_dir + "': " + ec.message());
  fs::create_directories(dir / "procs", ec);
  if (ec) {
    throw UserError("cannot create fake NVML state directory '" + (dir / "procs").string() +
                    "': " + ec.message());
  }
  // Jobs may run under other uids than colod (root launching as the submitter): they reach the
  // directory (colod's umask 077 would have made it 0700), the lock and the registries below.
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec, ec);
  fs::permissions(dir / "procs", fs::perms::all | fs::perms::sticky_bit, ec);
  fs::create_directories(dir / "accounting", ec);  // NVML accounting mode's per-process peaks
  if (ec) throw UserError("cannot create '" + (dir / "accounting").string() + "': " + ec.message());
  fs::permissions(dir / "accounting", fs::perms::all | fs::perms::sticky_bit, ec);
  {
    std::ofstream lock(dir / "lock", std::ios::app);
  }
  fs::permissions(dir / "lock",
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                      fs::perms::group_write | fs::perms::others_read | fs::perms::others_write,
                  ec);
  {
    std::ofstream out(dir / "gpus.spec", std::ios::trunc);
    out << spec << "\n";
    if (!out) throw UserError("cannot write '" + (dir / "gpus.spec").string() + "'");
  }
  fs::permissions(dir / "gpus.spec", fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                                          fs::perms::others_read, ec);
  const std::string spec_s(spec);
  if (::setenv("COLO_FAKE_NVML_GPUS", spec_s.c_str(), 1) != 0 ||
      ::setenv("COLO_FAKE_NVML_DIR", dir.c_str(), 1) != 0) {
    throw UserError(std::string("setenv for the fake NVML failed: ") + std::strerror(errno));
  }
  FakeNvmlSetup setup;
  setup.library_path = fake_nvml_library_path();
  setup.dcgm_library_path = fake_dcgm_library_path();
  setup.job_env = {{"COLO_FAKE_NVML_GPUS", spec_s}, {"COLO_FAKE_NVML_DIR", dir.string()}};
  return setup;
}

std::unique_ptr<GpuBackend> open_fake_nvml_backend(std::string_view spec,
                                                   const std::string& state_dir,
                                                   FakeNvmlSetup* setup) {
  FakeNvmlSetup s = configure_fake_nvml_env(spec, state_dir);
  NvmlOptions opts;
  opts.library = s.library_path;
  opts.dcgm_library = s.dcgm_library_path;
  auto backend = open_nvml_backend(opts);
  if (setup) *setup = std::move(s);
  return backend;
}

void set_fake_gpu_failure(const std::string& state_dir, int index, bool failing) {
  const std::string path = state_dir + "/fail-" + std::to_string(index);
  if (failing) {
    std::ofstream out(path, std::ios::trunc);
    out << "15\n";  // NVML_ERROR_GPU_IS_LOST
    if (!out) throw UserError("cannot write '" + path + "'");
  } else {
    std::filesystem::remove(path);
  }
}

void add_fake_call_failure(const std::string& state_dir, int index, const std::string& call,
                           int nvml_code) {
  const std::string path = state_dir + "/fail-" + std::to_string(index);
  std::ofstream out(path, std::ios::app);
  out << nvml_code << ' ' << call << "\n";
  if (!out) throw UserError("cannot write '" + path + "'");
}

}  // namespace colo::gpu
