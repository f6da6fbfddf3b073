// colo-fake-job: a stand-in for a training job on the fake NVML. It finds its GPUs the way a
// CUDA application does (CUDA_VISIBLE_DEVICES: UUIDs or indices), "allocates" memory on each
// by registering its pid in the fake NVML state directory, optionally ramping up, and dies
// with PyTorch's out-of-memory message when a GPU would be over-committed.
//
// Usage: kUsage below (what --help prints).
//
// --progress-rate: while it holds its memory it reports STEPS_PER_S × seconds held as its
// training progress in the file COLO_BENCH_PROGRESS names (`colo bench collocation`'s protocol,
// cli/bench_job.h), rewritten whole every 50 ms.
// --checkpoint-state: it behaves as a training job under colod's time slots should
// (daemon/checkpoint_request.h): asked to checkpoint (the signal named by COLO_CHECKPOINT_SIGNAL,
// or COLO_CHECKPOINT_FILE appearing) it saves how long it has held so far in FILE and exits 75;
// started again it resumes from FILE (--hold counts the total over its launches).
// --checkpoint-ignore: it takes the request (does not die of the signal) but keeps running.
//
// Needs COLO_FAKE_NVML_DIR (and COLO_FAKE_NVML_GPUS or DIR/gpus.spec), as the fake library.
// Honours CUDA_MPS_PINNED_DEVICE_MEM_LIMIT as an MPS client would (over the limit = OOM).
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "gpu/fake_nvml/fake_spec.h"
#include "gpu/fake_nvml/fake_state.h"

namespace {

using colo::MiB;
namespace fake = colo::gpu::fake;

std::atomic<bool> g_stop{false};
std::atomic<bool> g_checkpoint{false};
void on_signal(int) { g_stop = true; }
void on_checkpoint_signal(int) { g_checkpoint = true; }

struct Options {
  MiB mem = 0;
  double ramp_s = 0;
  double hold_s = 0;  // infinity = until signalled
  double sm_activity = 0;
  std::optional<double> sm_occupancy;
  int exit_code = 0;
  // Hold until this file exists (then exit): tests end a job when they have seen what they
  // need, instead of guessing how long it must run.
  std::string until_file;
  std::string checkpoint_state;  // --checkpoint-state FILE
  bool checkpoint_ignore = false;
  double progress_rate = 0;  // --progress-rate: steps per second held
};

constexpr const char* kUsage =
    "usage: colo-fake-job --mem 10GiB [--ramp S] [--hold S|inf] [--until-file PATH] [--sm-activity A]\n"
    "                     [--sm-occupancy O] [--exit-code N] [--checkpoint-state FILE [--checkpoint-ignore]]\n"
    "                     [--progress-rate STEPS_PER_S]\n"
    "A stand-in training job on the fake NVML (COLO_FAKE_NVML_DIR): holds --mem on each GPU of\n"
    "CUDA_VISIBLE_DEVICES, fails with PyTorch's out-of-memory message when it would not fit\n"
    "(docs/GPU-BACKEND.md, \"Jobs\").\n";

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "colo-fake-job: error: %s\n", msg.c_str());
  std::exit(2);
}

double parse_number(const std::string& flag, const std::string& v, double lo, double hi) {
  if (v == "inf") return INFINITY;
  char* end = nullptr;
  errno = 0;
  double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno != 0 || !(d >= lo && d <= hi)) {
    usage_error(flag + " '" + v + "' must be a number in [" + std::to_string(lo) + ", " +
                std::to_string(hi) + "]");
  }
  return d;
}

MiB parse_mem(const std::string& v) {
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(v.c_str(), &end, 10);
  std::string unit = end ? end : "";
  if (v.empty() || end == v.c_str() || errno != 0 || n < 0) {
    usage_error("--mem '" + v + "' must look like 10GiB or 512MiB");
  }
  if (unit == "GiB") return n * colo::kGiB;
  if (unit == "MiB") return n;
  usage_error("--mem '" + v + "': unit must be GiB or MiB");
}

Options parse_args(int argc, char** argv) {
  Options o;
  bool have_mem = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--mem") {
      o.mem = parse_mem(value());
      have_mem = true;
    } else if (a == "--ramp") {
      o.ramp_s = parse_number(a, value(), 0, 86400);
    } else if (a == "--hold") {
      o.hold_s = parse_number(a, value(), 0, INFINITY);
    } else if (a == "--sm-activity") {
      o.sm_activity = parse_number(a, value(), 0, 1);
    } else if (a == "--sm-occupancy") {
      o.sm_occupancy = parse_number(a, value(), 0, 1);
    } else if (a == "--until-file") {
      o.until_file = value();
      if (o.until_file.empty()) usage_error("--until-file needs a path");
    } else if (a == "--checkpoint-state") {
      o.checkpoint_state = value();
      if (o.checkpoint_state.empty()) usage_error("--checkpoint-state needs a path");
    } else if (a == "--checkpoint-ignore") {
      o.checkpoint_ignore = true;
    } else if (a == "--progress-rate") {
      o.progress_rate = parse_number(a, value(), 0, 1e9);
      if (!std::isfinite(o.progress_rate)) usage_error("--progress-rate must be a finite number of steps per second");
    } else if (a == "--exit-code") {
      o.exit_code = static_cast<int>(parse_number(a, value(), 0, 255));
    } else {
      usage_error("unknown argument '" + a + "'");
    }
  }
  if (!have_mem) usage_error("--mem is required");
  if (o.checkpoint_ignore && o.checkpoint_state.empty()) usage_error("--checkpoint-ignore needs --checkpoint-state");
  return o;
}

struct Device {
  int gpu = 0;
  std::string uuid;
  MiB total = 0;
};

// The devices this process sees, CUDA-style: CUDA_VISIBLE_DEVICES lists UUIDs or indices;
// unset means every GPU (a MIG-enabled GPU shows its first instance).
std::vector<Device> visible_devices(const std::vector<colo::gpu::FakeGpuSpec>& gpus) {
  auto device_of = [&](int i) {
    const auto& g = gpus[static_cast<std::size_t>(i)];
    if (!g.mig.empty()) return Device{i, colo::gpu::fake_mig_uuid(i, 0), g.mig[0].total_mib};
    return Device{i, colo::gpu::fake_gpu_uuid(i), g.total_mib};
  };
  std::vector<Device> out;
  const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!cvd) {
    for (std::size_t i = 0; i < gpus.size(); ++i) out.push_back(device_of(static_cast<int>(i)));
    return out;
  }
  std::string list = cvd;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? comma : comma - start);
    start = comma == std::string::npos ? list.size() + 1 : comma + 1;
    if (item.empty()) continue;
    bool found = false;
    for (std::size_t i = 0; i < gpus.size() && !found; ++i) {
      const int gi = static_cast<int>(i);
      if (item == std::to_string(i) || item == colo::gpu::fake_gpu_uuid(gi)) {
        if (!gpus[i].mig.empty()) {
          std::fprintf(stderr, "RuntimeError: CUDA error: GPU %s has MIG enabled; select a MIG "
                               "instance UUID\n", item.c_str());
          std::exit(1);
        }
        out.push_back(device_of(gi));
        found = true;
      }
      for (std::size_t j = 0; j < gpus[i].mig.size() && !found; ++j) {
        if (item == colo::gpu::fake_mig_uuid(gi, static_cast<int>(j))) {
          out.push_back(Device{gi, item, gpus[i].mig[j].total_mib});
          found = true;
        }
      }
    }
    if (!found) {
      // CUDA stops at the first invalid entry; a job with none left has no device.
      break;
    }
  }
  return out;
}

// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT ("0=4096M,1=2G"): under MPS, the device memory a client
// may allocate on each of its device ordinals; beyond it allocations fail as out of memory.
std::vector<MiB> mps_limits(std::size_t devices) {
  std::vector<MiB> out(devices, 0);  // 0 = no limit
  const char* v = std::getenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
  if (!v || !*v) return out;
  std::string list = v;
  std::size_t start = 0;
  while (start < list.size()) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    const std::string item = list.substr(start, comma - start);
    start = comma + 1;
    const std::size_t eq = item.find('=');
    char* end = nullptr;
    const long dev = eq == std::string::npos ? -1 : std::strtol(item.c_str(), &end, 10);
    if (eq == std::string::npos || end != item.c_str() + eq || dev < 0)
      usage_error("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT '" + list + "': expected DEVICE=SIZE[M|G],...");
    const std::string size = item.substr(eq + 1);
    const long long n = std::strtoll(size.c_str(), &end, 10);
    const std::string unit = end ? end : "";
    if (size.empty() || n <= 0 || (unit != "M" && unit != "G" && unit != "MB" && unit != "GB"))
      usage_error("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT '" + list + "': expected DEVICE=SIZE[M|G],...");
    if (static_cast<std::size_t>(dev) < devices) out[static_cast<std::size_t>(dev)] = unit[0] == 'G' ? n * colo::kGiB : n;
  }
  return out;
}

std::string gib(MiB mib) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(mib) / 1024.0);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parse_args(argc, argv);
  const char* dir = std::getenv("COLO_FAKE_NVML_DIR");
  if (!dir || !*dir) usage_error("COLO_FAKE_NVML_DIR is not set (the fake NVML state directory)");
  fake::StateDir state(dir);
  const char* env_spec = std::getenv("COLO_FAKE_NVML_GPUS");
  std::string spec = env_spec && *env_spec ? env_spec : state.stored_spec();
  std::vector<colo::gpu::FakeGpuSpec> gpus;
  try {
    gpus = colo::gpu::parse_fake_gpu_spec(spec);
  } catch (const colo::UserError& e) {
    usage_error(e.what());
  }
  std::vector<Device> devices = visible_devices(gpus);
  if (devices.empty()) {
    std::fprintf(stderr, "RuntimeError: No CUDA GPUs are available\n");
    return 1;
  }

  const std::vector<MiB> limits = mps_limits(devices.size());
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  // Time slots: the checkpoint request's signal (named as colod names it) and file.
  const char* request_file = std::getenv("COLO_CHECKPOINT_FILE");
  double resumed_s = 0;
  if (!opt.checkpoint_state.empty()) {
    const char* name = std::getenv("COLO_CHECKPOINT_SIGNAL");
    const std::string sig = name ? name : "USR1";
    const int signo = sig == "USR2" ? SIGUSR2 : sig == "INT" ? SIGINT : sig == "HUP" ? SIGHUP : SIGUSR1;
    std::signal(signo, on_checkpoint_signal);
    std::ifstream in(opt.checkpoint_state);
    if (in >> resumed_s) std::printf("colo-fake-job: resumed from checkpoint at %.1f s\n", resumed_s);
  }
  auto checkpoint_requested = [&] {
    if (opt.checkpoint_state.empty()) return false;
    return g_checkpoint.load() || (request_file && *request_file && ::access(request_file, F_OK) == 0);
  };
  const int pid = static_cast<int>(::getpid());
  fake::ProcessRecord rec;
  rec.pid = pid;
  rec.start_time = fake::process_start_time(pid).value_or(0);
  const double occupancy = opt.sm_occupancy.value_or(opt.sm_activity / 2.0);

  auto finish = [&](int code) {
    state.remove_record(pid);
    if (g_stop) {
      // Die of the signal, as an unhandled SIGTERM would, so the exit status says so.
      std::signal(SIGTERM, SIG_DFL);
      std::raise(SIGTERM);
    }
    return code;
  };
  // `colo bench collocation`: progress = rate × seconds held, written whole (temp file, rename).
  const char* progress_file = std::getenv("COLO_BENCH_PROGRESS");
  std::optional<std::chrono::steady_clock::time_point> holding_since;
  auto report_progress = [&] {
    if (!holding_since || opt.progress_rate <= 0 || !progress_file || !*progress_file) return;
    const double held_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - *holding_since).count();
    const std::string tmp = std::string(progress_file) + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
      std::fprintf(f, "%.3f\n", opt.progress_rate * held_s);
      std::fclose(f);
      std::rename(tmp.c_str(), progress_file);
    }
  };
  auto sleep_for = [&](double seconds) {
    using namespace std::chrono;
    const auto until = steady_clock::now() + duration<double>(std::min(seconds, 1e9));
    while (!g_stop && steady_clock::now() < until) {
      report_progress();
      if (!opt.until_file.empty() && ::access(opt.until_file.c_str(), F_OK) == 0) return;
      if (!opt.checkpoint_ignore && checkpoint_requested()) return;
      std::this_thread::sleep_for(std::min<steady_clock::duration>(
          milliseconds(50), duration_cast<steady_clock::duration>(until - steady_clock::now())));
    }
  };

  // Ramp in steps of about 0.1 s; every step is a check-and-allocate under the state lock.
  const int steps = opt.ramp_s > 0 ? std::max(1, static_cast<int>(std::ceil(opt.ramp_s / 0.1))) : 1;
  MiB held = 0;
  for (int k = 1; k <= steps && !g_stop; ++k) {
    const MiB target = opt.mem * k / steps;
    {
      fake::StateDir::Lock lock(state.path());
      auto live = state.live_processes(/*lock_held=*/true);
      for (std::size_t d = 0; d < devices.size(); ++d) {
        MiB others = 0;
        for (const auto& r : live) {
          if (r.pid == pid) continue;
          for (const auto& a : r.allocations) {
            if (a.uuid == devices[d].uuid) others += a.mib;
          }
        }
        const bool over_mps_limit = limits[d] > 0 && target > limits[d];
        if (others + target > devices[d].total || over_mps_limit) {
          const MiB free = over_mps_limit ? limits[d] - held : devices[d].total - others - held;
          std::fprintf(stderr,
                       "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate %s. "
                       "GPU %zu has a total capacity of %s of which %s is free. Including "
                       "non-PyTorch memory, this process has %s memory in use. Of the allocated "
                       "memory %s is allocated by PyTorch, and 0 bytes is reserved by PyTorch "
                       "but unallocated.\n",
                       gib(target - held).c_str(), d, gib(devices[d].total).c_str(),
                       gib(std::max<MiB>(0, free)).c_str(), gib(held).c_str(), gib(held).c_str());
          state.remove_record(pid);
          return 1;
        }
      }
      rec.allocations.clear();
      for (const Device& dev : devices) {
        rec.allocations.push_back({dev.uuid, target, opt.sm_activity, occupancy});
      }
      state.write_record(rec);
      held = target;
    }
    if (steps > 1) sleep_for(opt.ramp_s / steps);
  }
  if (g_stop) return finish(143);
  for (const Device& dev : devices) {
    std::printf("colo-fake-job: pid %d holds %lld MiB on %s\n", pid, static_cast<long long>(held),
                dev.uuid.c_str());
  }
  std::fflush(stdout);
  const auto held_from = std::chrono::steady_clock::now();
  holding_since = held_from;
  sleep_for(opt.until_file.empty() ? std::max(0.0, opt.hold_s - resumed_s) : INFINITY);
  const bool done = !opt.until_file.empty() ? ::access(opt.until_file.c_str(), F_OK) == 0
                                            : std::chrono::duration<double>(std::chrono::steady_clock::now() - held_from)
                                                      .count() >= opt.hold_s - resumed_s;
  if (!g_stop && !done && !opt.checkpoint_ignore && checkpoint_requested()) {
    // Save the progress (written whole, then renamed) and leave with the checkpoint exit code.
    const double progress =
        resumed_s + std::chrono::duration<double>(std::chrono::steady_clock::now() - held_from).count();
    const std::string tmp = opt.checkpoint_state + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << progress << "\n";
    }
    if (std::rename(tmp.c_str(), opt.checkpoint_state.c_str()) != 0) {
      std::fprintf(stderr, "colo-fake-job: cannot save the checkpoint %s: %s\n", opt.checkpoint_state.c_str(),
                   std::strerror(errno));
      return finish(1);
    }
    std::printf("colo-fake-job: checkpointed at %.1f s\n", progress);
    std::fflush(stdout);
    return finish(75);
  }
  if (opt.checkpoint_ignore && checkpoint_requested()) std::printf("colo-fake-job: checkpoint request ignored\n");
  return finish(opt.exit_code);
}
