#include "estimate/trace/probe_runner.h"
#include "common/join_cgroup.h"
#include "common/resource_path.h"
#include "common/session_keyring.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/limits.h"
#include "core/one_line.h"
#include "estimate/allocator/allocator_settings.h"
#include "estimate/trace/script_command.h"

extern char** environ;

namespace colo::estimate {

namespace fs = std::filesystem;

namespace {

bool one_of(const std::string& v, std::initializer_list<const char*> allowed) {
  for (const char* a : allowed)
    if (v == a) return true;
  return false;
}

// Reads `fd` until end of file, or, once `stop` is set, until nothing more is buffered: a process
// the probe started in a session of its own keeps the pipe open after the probe is gone, and
// colo must not wait for it (nor past its timeout).
std::string read_until_eof_or_stop(int fd, const std::atomic<bool>& stop) {
  std::string out;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, stop.load() ? 0 : 50);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      if (stop.load()) return out;
      continue;
    }
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
      if (out.size() > (1u << 17)) out.erase(0, out.size() - (1u << 16));  // keep the tail: the error is last
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return out;
  }
}

// The last line of the probe's stderr that says what went wrong.
std::string last_error_line(const std::string& err) {
  std::string best;
  std::size_t pos = 0;
  while (pos < err.size()) {
    std::size_t nl = err.find('\n', pos);
    if (nl == std::string::npos) nl = err.size();
    std::string line = err.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) continue;
    // (anywhere in the line: a prompt the script printed without a newline comes first)
    if (const auto at = line.find("colo_probe: error: "); at != std::string::npos) return line.substr(at + 19);
    if (line.rfind("Traceback", 0) != 0 && line.rfind("  ", 0) != 0) best = line;
  }
  return best;
}

}  // namespace

namespace {

// A word handed to the probe's command line: bounded, no NUL (execve could not pass it).
void check_word(const std::string& w, const char* what) {
  if (w.size() > 4096) throw UserError(fmt::format("{}: an argument longer than 4096 bytes", what));
  if (w.find('\0') != std::string::npos) throw UserError(fmt::format("{}: an argument contains a NUL byte", what));
}

// --script: the script's own arguments follow its path; what --probe would take from colo's flags
// the script decides itself, so giving those flags too is a mistake worth naming.
std::vector<std::string> script_arguments(const ProbeRequest& r) {
  if (!r.model.empty()) throw UserError("give --probe MODEL or --script FILE, not both");
  if (r.script.empty()) throw UserError("--script: give the training script's path");
  check_word(r.script, "--script");
  if (r.script_args.size() > 4096) throw UserError("--script: more than 4096 script arguments");
  for (const auto& a : r.script_args) check_word(a, "--script");
  std::vector<std::string> own;
  if (r.batch > 0) own.emplace_back("--batch");
  if (r.amp != "none") own.emplace_back("--amp");
  if (r.checkpointing) own.emplace_back("--checkpointing");
  if (!r.set_to_none) own.emplace_back("--no-set-to-none");
  if (!r.input.empty()) own.emplace_back("--input");
  if (!r.dtype.empty()) own.emplace_back("--input-dtype");
  if (r.num_classes > 0) own.emplace_back("--num-classes");
  if (r.foreach != "auto") own.emplace_back("--foreach");
  if (!own.empty())
    throw UserError(fmt::format("{} {} the script's own choice when a script is probed (pass it in the script's arguments)",
                                fmt::join(own, ", "), own.size() == 1 ? "is" : "are"));
  if (r.data_parallel < 1 || r.data_parallel > 256)
    throw UserError(fmt::format("--data-parallel {} is out of range (1..256 GPUs)", r.data_parallel));
  if (r.torchrun < 0 || r.torchrun > 256)
    throw UserError(fmt::format("--nproc-per-node {} is out of range (1..256 processes)", r.torchrun));
  if (r.torchrun > r.data_parallel)
    throw UserError(fmt::format("--nproc-per-node {}: torchrun starts one process per GPU, and the job has {} GPU(s)",
                                r.torchrun, r.data_parallel));
  if (!r.python.empty()) {
    check_word(r.python, "--python");
    if (!is_python_interpreter(r.python))
      throw UserError(fmt::format("--python '{}': not a Python interpreter (python, python3 or python3.N, by path or not)",
                                  one_line(r.python)));
  }
  std::vector<std::string> a = {"--gpus", std::to_string(r.data_parallel)};
  if (r.torchrun > 0) a.insert(a.end(), {"--torchrun", std::to_string(r.torchrun)});
  a.insert(a.end(), {"--script", r.script});
  a.insert(a.end(), r.script_args.begin(), r.script_args.end());
  return a;
}

}  // namespace

std::vector<std::string> ProbeRequest::arguments() const {
  if (!script.empty()) return script_arguments(*this);
  if (!python.empty()) throw UserError("--python goes with a probed script (--probe MODEL runs under colo's own Python)");
  if (model.empty()) throw UserError("--probe: give a model (torchvision:NAME or path/to/file.py:function)");
  if (model.size() > 4096 || model.find('\0') != std::string::npos) throw UserError("--probe: model name too long");
  if (torchrun != 0) throw UserError("--nproc-per-node goes with a probed script (torchrun runs a script, not --probe MODEL)");
  if (batch <= 0 || batch > limits::kMaxBatch)
    throw UserError(fmt::format("--batch {} is out of range for --probe (expected 1..{})", batch, limits::kMaxBatch));
  if (!one_of(optimizer, {"sgd", "sgd-momentum", "adam", "adamw", "rmsprop", "adagrad", "adadelta"}))
    throw UserError(fmt::format("--optimizer '{}': the probe knows sgd, sgd-momentum, adam, adamw, rmsprop, adagrad, adadelta",
                                one_line(optimizer)));
  if (!one_of(amp, {"none", "fp16", "bf16"})) throw UserError(fmt::format("--amp '{}': expected fp16, bf16 or none", one_line(amp)));
  if (!one_of(foreach, {"auto", "on", "off"})) throw UserError(fmt::format("--foreach '{}': expected auto, on or off", one_line(foreach)));
  if (!dtype.empty() && !one_of(dtype, {"float32", "float16", "bfloat16", "float64", "int64", "int32"}))
    throw UserError(fmt::format("--input-dtype '{}': expected float32, float16, bfloat16, float64, int64 or int32", one_line(dtype)));
  if (num_classes < 0 || num_classes > (1ll << 31)) throw UserError("--num-classes is out of range");
  if (data_parallel < 1 || data_parallel > 256)
    throw UserError(fmt::format("--data-parallel {} is out of range (1..256 GPUs)", data_parallel));
  if (!input.empty()) {
    // Dimensions 1..1048576 (what the probe accepts), at most 8 of them.
    std::size_t dims = 0, digits = 0;
    std::int64_t value = 0;
    auto bad = [&] { return UserError(fmt::format("--input '{}': expected a shape like 3x224x224, each dimension 1..1048576",
                                                  one_line(input))); };
    for (char c : input) {
      if (c >= '0' && c <= '9') {
        value = value * 10 + (c - '0');
        if (++digits > 7 || value > (1 << 20)) throw bad();
      } else if (c == 'x' && digits > 0 && value > 0) {
        digits = 0;
        value = 0;
        ++dims;
      } else {
        throw bad();
      }
    }
    if (digits == 0 || value == 0 || dims > 7) throw bad();
  }
  std::vector<std::string> a = {"--model", model, "--batch", std::to_string(batch), "--optimizer", optimizer,
                                "--amp", amp, "--foreach", foreach};
  if (!input.empty()) a.insert(a.end(), {"--input", input});
  if (!dtype.empty()) a.insert(a.end(), {"--dtype", dtype});
  if (num_classes > 0) a.insert(a.end(), {"--num-classes", std::to_string(num_classes)});
  if (checkpointing) a.emplace_back("--checkpointing");
  if (!set_to_none) a.emplace_back("--no-set-to-none");
  if (data_parallel > 1) a.insert(a.end(), {"--data-parallel", std::to_string(data_parallel)});
  return a;
}

nlohmann::json ProbeRequest::to_json() const {
  nlohmann::json j;
  if (!script.empty()) {
    j = {{"script", script}, {"script_args", script_args}, {"data_parallel", data_parallel}};
    if (torchrun > 0) j["torchrun"] = torchrun;
    if (!python.empty()) j["python"] = python;
  }
  else
    j = {{"model", model}, {"input", input}, {"dtype", dtype}, {"num_classes", num_classes},
         {"batch", batch}, {"optimizer", optimizer}, {"amp", amp}, {"checkpointing", checkpointing},
         {"set_to_none", set_to_none}, {"foreach", foreach}, {"data_parallel", data_parallel}};
  if (!alloc_conf.empty()) j["alloc_conf"] = alloc_conf;
  return j;
}

namespace {

// An integer field: nlohmann's get<int64_t>() would truncate 2.7 to 2 and turn 1e300 into
// whatever the conversion gives.
std::int64_t integer_field(const nlohmann::json& j, const char* key, std::int64_t fallback, const std::string& where) {
  if (!j.contains(key)) return fallback;
  const nlohmann::json& v = j.at(key);
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    throw UserError(fmt::format("{}: probe field '{}' is too large", where, key));
  if (!v.is_number_integer()) throw UserError(fmt::format("{}: probe field '{}': expected an integer", where, key));
  return v.get<std::int64_t>();
}

// The request's own checks (ProbeRequest::arguments) name the CLI flag; say where it came from.
void validate(const ProbeRequest& r, const std::string& where) {
  try {
    r.arguments();
  } catch (const UserError& e) {
    throw UserError(fmt::format("{}: {}", where, e.what()));
  }
}

}  // namespace

ProbeRequest ProbeRequest::from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw UserError(where + ": probe request must be an object");
  for (const auto& [key, value] : j.items())
    if (!one_of(key, {"model", "input", "dtype", "num_classes", "batch", "optimizer", "amp", "checkpointing",
                      "set_to_none", "foreach", "data_parallel", "script", "script_args", "torchrun", "alloc_conf",
                      "python"}))
      throw UserError(fmt::format("{}: unknown probe field '{}'", where, one_line(key)));
  ProbeRequest r;
  if (j.contains("alloc_conf")) {
    if (!j.at("alloc_conf").is_string()) throw UserError(where + ": probe field 'alloc_conf': expected a string");
    r.alloc_conf = j.at("alloc_conf").get<std::string>();
    try {
      parse_allocator_settings(r.alloc_conf);
    } catch (const UserError& e) {
      throw UserError(fmt::format("{}: {}", where, e.what()));
    }
  }
  if (j.contains("script")) {
    try {
      r.script = j.at("script").get<std::string>();
      r.script_args = j.value("script_args", std::vector<std::string>{});
      r.python = j.value("python", std::string());
    } catch (const nlohmann::json::exception&) {
      throw UserError(where + ": malformed probe request (script, python: strings, script_args: strings, data_parallel: an integer)");
    }
    if (r.script.empty()) throw UserError(where + ": probe request has an empty script");
    for (const char* k : {"model", "input", "dtype", "num_classes", "batch", "optimizer", "amp", "checkpointing", "set_to_none", "foreach"})
      if (j.contains(k)) throw UserError(fmt::format("{}: probe field '{}' does not go with 'script'", where, k));
    r.data_parallel = integer_field(j, "data_parallel", 1, where);
    r.torchrun = integer_field(j, "torchrun", 0, where);
    validate(r, where);
    return r;
  }
  if (j.contains("torchrun")) throw UserError(where + ": probe field 'torchrun' goes with 'script'");
  if (j.contains("python")) throw UserError(where + ": probe field 'python' goes with 'script'");
  try {
    r.model = j.at("model").get<std::string>();
    r.input = j.value("input", std::string());
    r.dtype = j.value("dtype", std::string());
    if (!j.contains("batch")) throw UserError(where + ": probe request has no 'batch'");
    r.optimizer = j.value("optimizer", std::string("adam"));
    r.amp = j.value("amp", std::string("none"));
    r.checkpointing = j.value("checkpointing", false);
    r.set_to_none = j.value("set_to_none", true);
    r.foreach = j.value("foreach", std::string("auto"));
  } catch (const nlohmann::json::exception&) {
    throw UserError(where + ": malformed probe request (model and batch are required; strings, integers, booleans)");
  }
  r.num_classes = integer_field(j, "num_classes", 0, where);
  r.batch = integer_field(j, "batch", 0, where);
  r.data_parallel = integer_field(j, "data_parallel", 1, where);
  validate(r, where);
  return r;
}

std::string probe_python() {
  if (const char* p = std::getenv("COLO_PYTHON"); p && *p) return p;
  if (::access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  return "python3";
}

std::string probe_package_dir() {
  if (const char* p = std::getenv("COLO_PROBE_PATH"); p && *p) {
    // Named by hand: a typo would otherwise surface as Python's "No module named colo_probe".
    if (std::error_code ec; !fs::exists(fs::path(p) / "colo_probe" / "__main__.py", ec))
      throw UserError(fmt::format("$COLO_PROBE_PATH ({}) holds no colo_probe package (colo_probe/__main__.py)", one_line(p)));
    // Absolute: the probe starts in the job's working directory.
    std::error_code ec;
    const fs::path absolute = fs::absolute(p, ec);
    std::string dir = (ec ? fs::path(p) : absolute).lexically_normal().string();
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return dir;
  }
  const std::string main_py = resource_path(nullptr, "python", "colo_probe/__main__.py");
  if (fs::exists(main_py)) return fs::path(main_py).parent_path().parent_path().string();
  throw UserError("the colo_probe package is not installed (looked in $COLO_PROBE_PATH, " +
                  resource_search_text(nullptr, "python") + ")");
}

namespace {

struct ProbeCommand {
  std::vector<std::string> argv, env;
  std::vector<std::string> interpreter_paths;  // where argv[0] is looked for, in order
  std::string package_dir;                     // probe_package_dir(), on the probe's PYTHONPATH
};

constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

ProbeCommand probe_command(const ProbeRequest& req, const std::string& out_path, const ProbeSpawn& how) {
  const ProbeIdentity* who = how.identity;
  const auto args = req.arguments();
  ProbeCommand c;
  const std::string python = !how.interpreter.empty() ? how.interpreter : !req.python.empty() ? req.python : probe_python();
  // --out first: in script mode every word after the script's path is the script's own.
  c.argv = {python, "-m", "colo_probe", "--out", out_path};
  c.argv.insert(c.argv.end(), args.begin(), args.end());
  std::string search_path = kDefaultPath, pythonpath;
  const bool own_conf = !req.alloc_conf.empty() || req.default_alloc_conf;
  // Every entry of the job's (or the caller's) environment but the ones the probe sets itself.
  auto take = [&](const std::string& name, const std::string& value) {
    if (name == "PYTHONPATH") {
      pythonpath = value;
      return;
    }
    if (name == "CUDA_VISIBLE_DEVICES" || (who && name == "PYTHONDONTWRITEBYTECODE")) return;
    if (own_conf && (name == "PYTORCH_CUDA_ALLOC_CONF" || name == "PYTORCH_ALLOC_CONF")) return;
    if (name == "PATH") search_path = value;
    c.env.push_back(name + "=" + value);
  };
  if (who) {
    for (const auto& [name, value] : who->env) take(name, value);
    auto has = [&](const std::string& name) {
      return std::any_of(c.env.begin(), c.env.end(), [&](const std::string& e) { return e.rfind(name + "=", 0) == 0; });
    };
    if (!has("PATH")) c.env.push_back(std::string("PATH=") + kDefaultPath);
    if (!has("HOME")) c.env.push_back("HOME=" + (who->home.empty() ? std::string("/") : who->home));
    if (!has("USER")) c.env.push_back("USER=" + who->user);
    if (!has("LOGNAME")) c.env.push_back("LOGNAME=" + who->user);
    if (!has("LANG")) c.env.push_back("LANG=C.UTF-8");
    c.env.push_back("PYTHONDONTWRITEBYTECODE=1");
  } else {
    for (char** e = environ; *e; ++e) {
      const char* eq = std::strchr(*e, '=');
      if (eq) take(std::string(*e, static_cast<std::size_t>(eq - *e)), eq + 1);
    }
  }
  if (!req.alloc_conf.empty()) c.env.push_back("PYTORCH_CUDA_ALLOC_CONF=" + req.alloc_conf);
  // The probe's package first; then the modules the job's own PYTHONPATH names.
  c.package_dir = probe_package_dir();
  c.env.push_back("PYTHONPATH=" + c.package_dir + (pythonpath.empty() ? "" : ":" + pythonpath));
  c.env.push_back("CUDA_VISIBLE_DEVICES=");  // CPU only, whatever the host has
  // execvp's rule, with the job's PATH: a name with a slash is a path (relative to the working
  // directory), any other is looked for in each PATH directory (an empty one is ".").
  if (python.find('/') != std::string::npos) {
    c.interpreter_paths = {python};
  } else {
    std::size_t from = 0;
    for (;;) {
      const std::size_t colon = search_path.find(':', from);
      const std::string dir = search_path.substr(from, colon == std::string::npos ? std::string::npos : colon - from);
      c.interpreter_paths.push_back((dir.empty() ? std::string(".") : dir) + "/" + python);
      if (colon == std::string::npos) break;
      from = colon + 1;
    }
  }
  return c;
}

[[noreturn]] void child_fail(const char* what) {
  char msg[5120] = "colo_probe: error: cannot start the probe: ";  // room for a path of PATH_MAX
  std::strncat(msg, what, sizeof msg - std::strlen(msg) - 2);
  std::strncat(msg, "\n", sizeof msg - std::strlen(msg) - 1);
  [[maybe_unused]] auto n = ::write(2, msg, std::strlen(msg));
  ::_exit(127);
}

}  // namespace

int spawn_probe(const ProbeRequest& req, const ProbeLimits& limits, const ProbeSpawn& how) {
  ProbeCommand cmd = probe_command(req, how.out_fd >= 0 ? "/dev/fd/3" : how.out_path, how);
  const std::string cannot_run = fmt::format("cannot run the Python interpreter '{}'", one_line(cmd.argv[0]));
  std::vector<char*> argv, envp;
  for (auto& s : cmd.argv) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : cmd.env) envp.push_back(s.data());
  envp.push_back(nullptr);
  // Everything the child needs is computed here: between fork and exec it only makes system calls.
  std::vector<gid_t> groups;
  const ProbeIdentity* who = how.identity;
  if (who) {
    if (who->uid < 0 || who->gid < 0) throw UserError("probe: no identity to run as");
    int n = 64;
    groups.resize(static_cast<std::size_t>(n));
    if (::getgrouplist(who->user.c_str(), static_cast<gid_t>(who->gid), groups.data(), &n) < 0) {
      groups.resize(static_cast<std::size_t>(n));
      if (::getgrouplist(who->user.c_str(), static_cast<gid_t>(who->gid), groups.data(), &n) < 0) n = 0;
    }
    groups.resize(static_cast<std::size_t>(std::max(n, 0)));
    if (groups.empty()) groups.push_back(static_cast<gid_t>(who->gid));
  }
  // What Python's import needs of the package (listing and entering both directories, reading the
  // entry point), checked as the user the probe runs as: otherwise the failure would read as
  // "No module named colo_probe", naming neither the directory nor the cause.
  const std::string& package = cmd.package_dir;
  const std::string package_module = package + "/colo_probe", package_main = package_module + "/__main__.py";
  const std::string unreadable =
      fmt::format("the probe package in {} is not readable by the user the probe runs as{}", one_line(package),
                  who ? " (" + one_line(who->user) + ")" : std::string());
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw UserError(fmt::format("probe: fork: {}", std::strerror(errno)));
  if (pid > 0) return pid;
  ::setpgid(0, 0);
  if (!how.cgroup_procs.empty() && !join_cgroup(how.cgroup_procs.c_str())) child_fail("cannot join the probe's cgroup");
  // The descriptors handed in may sit anywhere, even at 2 or 3 (a caller with few open): copied
  // above those first, so that placing one cannot overwrite the other, and so that each dup2 is
  // onto another number (which clears close-on-exec; a dup2 onto itself keeps it, and the trace
  // would be closed at exec).
  const int err_copy = how.err_fd >= 0 ? ::fcntl(how.err_fd, F_DUPFD_CLOEXEC, 10) : -1;
  const int out_copy = how.out_fd >= 0 ? ::fcntl(how.out_fd, F_DUPFD_CLOEXEC, 10) : -1;
  if ((how.err_fd >= 0 && err_copy < 0) || (how.out_fd >= 0 && out_copy < 0)) child_fail("fcntl(F_DUPFD)");
  if (err_copy >= 0 && ::dup2(err_copy, 2) != 2) child_fail("dup2");
  const int devnull = ::open("/dev/null", O_RDWR);
  if (devnull >= 0) {
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
    if (err_copy < 0) ::dup2(devnull, 2);
  }
  if (out_copy >= 0 && ::dup2(out_copy, 3) != 3) child_fail("dup2");
  // None of the caller's descriptors leak in; where close_range is refused (a kernel before
  // 5.9, a seccomp filter), one close per possible descriptor — up to a million; past that the
  // probe is refused rather than left holding what it cannot close.
  const int first_free = how.out_fd >= 0 ? 4 : 3;
  if (::close_range(static_cast<unsigned>(first_free), ~0u, 0) != 0) {
    rlimit nofile{};
    if (::getrlimit(RLIMIT_NOFILE, &nofile) != 0 || nofile.rlim_max > (rlim_t{1} << 20))
      child_fail("close_range refused, and too many possible descriptors to close one by one");
    for (rlim_t fd = static_cast<rlim_t>(first_free); fd < nofile.rlim_max; ++fd) ::close(static_cast<int>(fd));
  }
  // No core file of this copy of the caller (every job's argv and environment) before the identity
  // change; and not dumpable by the user until exec whatever fs.suid_dumpable says.
  rlimit core{0, 0};
  ::setrlimit(RLIMIT_CORE, &core);
  if (who) {
    if (::setgroups(groups.size(), groups.data()) != 0 && ::geteuid() == 0) child_fail("setgroups");
    if (::setgid(static_cast<gid_t>(who->gid)) != 0) child_fail("setgid");
    if (::setuid(static_cast<uid_t>(who->uid)) != 0) child_fail("setuid");
    if (who->uid != 0 && ::setuid(0) == 0) child_fail("could not drop root");
    ::prctl(PR_SET_DUMPABLE, 0);  // exec of the interpreter makes it dumpable again, as the user's
    ::umask(static_cast<mode_t>(who->umask & 0777));
    if (!join_own_session_keyring()) child_fail("keyctl(JOIN_SESSION_KEYRING)");
    // After the identity change (which clears it): die with colod.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(125);
  }
  if (::access(package.c_str(), R_OK | X_OK) != 0 || ::access(package_module.c_str(), R_OK | X_OK) != 0 ||
      ::access(package_main.c_str(), R_OK) != 0)
    child_fail(unreadable.c_str());
  rlimit as{limits.address_space_bytes, limits.address_space_bytes};
  ::setrlimit(RLIMIT_AS, &as);
  if (!limits.workdir.empty() && ::chdir(limits.workdir.c_str()) != 0) child_fail("cannot enter the working directory");
  for (const std::string& path : cmd.interpreter_paths) ::execve(path.c_str(), argv.data(), envp.data());
  child_fail(cannot_run.c_str());
}

std::string probe_failure(const ProbeRequest& req, int status, const std::string& err, const ProbeLimits& limits) {
  if (WIFSIGNALED(status))
    return fmt::format("probe of {} was killed by signal {}{}", one_line(req.subject()), WTERMSIG(status),
                       WTERMSIG(status) == SIGKILL ? " (out of memory?)" : "");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  std::string why = last_error_line(err);
  if (why.empty()) why = fmt::format("exit status {}", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  if (why.find("MemoryError") != std::string::npos || why.find("std::bad_alloc") != std::string::npos)
    why += fmt::format(" (the probe's address-space limit is {} GiB)", limits.address_space_bytes >> 30);
  return fmt::format("probe of {} failed: {}", one_line(req.subject()), one_line(why));
}

ProbeRun run_probe(const ProbeRequest& req, const ProbeLimits& limits) {
  req.arguments();  // validates before anything is created
  char tmpl[] = "/tmp/colo-probe-XXXXXX";
  const int tfd = ::mkstemp(tmpl);
  if (tfd < 0) throw UserError(fmt::format("probe: cannot create a temporary file: {}", std::strerror(errno)));
  ::close(tfd);
  const std::string out_path = tmpl;
  struct Cleanup {
    std::string p;
    ~Cleanup() { ::unlink(p.c_str()); }
  } cleanup{out_path};

  int errpipe[2];
  if (::pipe2(errpipe, O_CLOEXEC) != 0) throw UserError(fmt::format("probe: pipe: {}", std::strerror(errno)));
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = -1;
  try {
    ProbeSpawn how;
    how.err_fd = errpipe[1];
    how.out_path = out_path;
    pid = spawn_probe(req, limits, how);
  } catch (...) {
    ::close(errpipe[0]);
    ::close(errpipe[1]);
    throw;
  }
  ::close(errpipe[1]);
  // stderr is drained on a thread so a chatty probe cannot block on a full pipe.
  std::string err;
  std::atomic<bool> exited{false};
  std::thread drain([&] { err = read_until_eof_or_stop(errpipe[0], exited); });
  int status = 0;
  bool timed_out = false;
  const auto deadline = t0 + std::chrono::duration<double>(limits.timeout_seconds);
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      timed_out = true;
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pid, SIGKILL);  // anything the probe left behind in its group
  exited = true;  // what the probe wrote is in the pipe now; a process outside its group may hold it open
  drain.join();
  ::close(errpipe[0]);
  ProbeRun run;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (timed_out)
    throw UserError(fmt::format("probe of {} timed out after {:.0f} s", one_line(req.subject()), limits.timeout_seconds));
  if (const std::string why = probe_failure(req, status, err, limits); !why.empty()) throw UserError(why);
  // Exit 0 and nothing written: the model file or script ended the process itself (os._exit).
  std::error_code ec;
  if (std::filesystem::file_size(out_path, ec) == 0 || ec)
    throw UserError(fmt::format("probe of {} ended (exit status 0) without writing a trace: the model file or script "
                                "ended the process itself (sys.exit / os._exit){}",
                                one_line(req.subject()), last_error_line(err).empty() ? "" : ": " + one_line(last_error_line(err))));
  try {
    run.trace = load_probe_trace(out_path);
  } catch (const UserError& e) {
    // Name what the user knows, the probe of their model, not the temporary file: "PATH:LINE: why"
    // becomes "probe of SUBJECT: trace line LINE: why".
    std::string why = e.what();
    if (why.rfind(out_path + ":", 0) == 0) {
      why.erase(0, out_path.size() + 1);
      const auto colon = why.find(':');
      if (colon != std::string::npos && colon > 0 && why.find_first_not_of("0123456789") == colon)
        why = "trace line " + why.substr(0, colon) + why.substr(colon);
      throw UserError(fmt::format("probe of {}: {}", one_line(req.subject()), why));
    }
    throw;
  }
  run.trace.source = "probe " + req.subject();
  if (!limits.keep_trace_as.empty()) {
    std::filesystem::copy_file(out_path, limits.keep_trace_as, std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) throw UserError(fmt::format("cannot keep the trace as {}: {}", one_line(limits.keep_trace_as), ec.message()));
  }
  return run;
}

}  // namespace colo::estimate
