// colo slurm: colo's parts of a Slurm cluster.
//   colo slurm conf --out DIR [--node NAME] [--fake-gpus SPEC --fake-gpu-dir DIR] [--shard-mib 1GiB]
//                   [--mps] [--state-dir DIR] [--site-path /etc/colo/slurm.toml] [--dev-prefix /dev/nvidia] …
//       writes gres.conf, slurm.conf.colo (lines to merge), job_submit.lua, colo-slurm.toml
//       (and colo-task-prolog with --mps) for this node's GPUs
//   colo slurm recover [--site FILE] [--interval 5] [--once]   the OOM recovery service
//   colo slurm node-weight [--site FILE] [--node NAME] [--interval 10] [--once]   the node's Weight from its GPUs
//   colo slurm task-prolog [--site FILE]   (Slurm TaskProlog on MPS nodes: the job's memory limit)
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "cli/command_registry.h"
#include "cli/number_option.h"
#include "slurm/atomic_file.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/one_line.h"
#include "core/parse_number.h"
#include "core/policy/node_weight.h"
#include "estimate/input_file.h"
#include "gpu/fake_nvml_env.h"
#include "gpu/nvml_backend.h"
#include "slurm/recover_agent.h"
#include "slurm/site_gpus.h"
#include "slurm/slurm_control.h"
#include "slurm/shard_plan.h"
#include "slurm/site_settings.h"
#include "slurm/slurm_conf.h"

namespace {

namespace slurm = colo::slurm;

struct ConfOpts {
  std::string out, node, fake_gpus, fake_gpu_dir, nvml_library, shard = "1GiB", site_path = "/etc/colo/slurm.toml";
  std::string dev_prefix = "/dev/nvidia", state_dir = "/var/lib/colo-slurm", oversize = "whole_gpu", step = "5GiB";
  bool mps = false;
  double margin = 0.10;
  int hold_exit_code = 75, max_retries = 3;
  std::int64_t default_shards = 0;
};

// Whole or not at all: a site's earlier job_submit.lua or gres.conf is never left half-replaced.
void write(const std::filesystem::path& p, const std::string& text, std::filesystem::perms perms) {
  slurm::write_file_atomically(p.string(), text, static_cast<mode_t>(perms));
}

// Slurm's default NodeName: the host name up to its first dot.
std::string short_host_name() {
  char host[HOST_NAME_MAX + 1] = {};
  ::gethostname(host, sizeof host);
  const std::string h = host;
  return h.substr(0, h.find('.'));
}

void conf(const ConfOpts& o) {
  if (o.out.empty()) throw colo::UserError("slurm conf: --out DIR is required");
  if (!o.fake_gpus.empty() && o.fake_gpu_dir.empty()) throw colo::UserError("--fake-gpus needs --fake-gpu-dir DIR (their state)");
  slurm::SiteSettings s;
  s.margin = o.margin;
  s.oversize = o.oversize;
  if (s.oversize != "whole_gpu" && s.oversize != "reject") throw colo::UserError("--oversize: whole_gpu or reject");
  s.hold_exit_code = o.hold_exit_code;
  if (const std::string why = slurm::hold_exit_code_problem(s.hold_exit_code); !why.empty())
    throw colo::UserError("--hold-exit-code " + why);
  s.max_retries = o.max_retries;
  s.step_mib = colo::parse_mib(o.step, "--step", 1, colo::limits::kMaxGpuMiB);
  s.mps = o.mps;
  // Paths that go into slurm.conf, gres.conf and colo-slurm.toml lines: absolute, and nothing
  // those formats would split or the loader would refuse (blanks, control characters).
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--state-dir", o.state_dir},
                                   {"--site-path", o.site_path}, {"--dev-prefix", o.dev_prefix}}) {
    if (path.empty() || path.front() != '/') throw colo::UserError(fmt::format("{} must be an absolute path", flag));
    for (char ch : path)
      if (static_cast<unsigned char>(ch) <= ' ' || ch == 0x7f || ch == '#' || ch == '"' || ch == '\\')
        throw colo::UserError(fmt::format("{} '{}': blanks, control characters, '#', '\"' and '\\' cannot be written "
                                          "into Slurm's configuration lines",
                                          flag, colo::one_line(path)));
  }
  s.state_dir = o.state_dir;
  s.nvml_library = o.nvml_library;
  slurm::NodeConf n;
  n.node = o.node.empty() ? short_host_name() : o.node;
  n.device_prefix = o.dev_prefix;
  n.site_path = o.site_path;
  n.colo_binary = std::filesystem::canonical("/proc/self/exe").string();
  std::unique_ptr<colo::gpu::GpuBackend> backend;
  if (!o.fake_gpus.empty()) {
    const std::string dir = std::filesystem::absolute(o.fake_gpu_dir).string();
    backend = colo::gpu::open_fake_nvml_backend(o.fake_gpus, dir);
    s.fake_gpus = o.fake_gpus;
    s.fake_gpu_dir = dir;
  } else {
    colo::gpu::NvmlOptions opts;
    opts.dcgm_mode = "off";
    if (!o.nvml_library.empty()) opts.library = o.nvml_library;
    backend = colo::gpu::open_nvml_backend(opts);
  }
  std::vector<colo::MiB> sizes;
  for (const auto& d : backend->discover()) {
    if (!d.error.empty()) throw colo::UserError(fmt::format("GPU {}: {}", d.index, colo::one_line(d.error)));
    n.gpus.push_back({d.index, d.total_mib, d.name});
    sizes.push_back(d.total_mib);
  }
  const colo::MiB wanted = colo::parse_mib(o.shard, "--shard-mib", 1, colo::limits::kMaxGpuMiB);
  s.shard_mib = slurm::choose_shard_mib(sizes, wanted);
  int smallest = INT_MAX;
  for (colo::MiB g : sizes) smallest = std::min(smallest, slurm::shards_in_gpu(g, s.shard_mib));
  if (smallest < 1) throw colo::UserError(fmt::format("a shard of {} MiB is larger than a GPU", s.shard_mib));
  s.shards_per_gpu = smallest;
  if (o.default_shards > smallest) throw colo::UserError(fmt::format("--default-shards {} is more than one GPU's {} shards", o.default_shards, smallest));
  s.default_shards = static_cast<int>(o.default_shards);

  const std::filesystem::path out(o.out);
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec || !std::filesystem::is_directory(out))
    throw colo::UserError(fmt::format("--out {}: cannot make it a directory{}", colo::one_line(o.out),
                                      ec ? ": " + ec.message() : std::string(" (a file is there)")));
  using P = std::filesystem::perms;
  const P rw = P::owner_read | P::owner_write | P::group_read | P::others_read;
  const std::string tmpl = colo::estimate::read_input_file(slurm::job_submit_lua_template_path(), 1 << 20, "job_submit.lua template");
  write(out / "gres.conf", slurm::gres_conf(n, s), rw);
  write(out / "slurm.conf.colo", slurm::slurm_conf_fragment(n, s), rw);
  write(out / "job_submit.lua", slurm::job_submit_lua(s, tmpl), rw);
  write(out / "colo-slurm.toml", s.to_toml(), rw);
  if (s.mps) write(out / "colo-task-prolog", slurm::task_prolog_script(n), rw | P::owner_exec | P::group_exec | P::others_exec);
  if (s.shard_mib != wanted)
    std::cout << fmt::format("note: {} MiB shards would pass Slurm's {} per node; using {} MiB\n", wanted,
                             slurm::kMaxShardsPerNode, s.shard_mib);
  std::cout << fmt::format("{}: {} GPU(s), {} MiB shards, {} shards per GPU (smallest) → {}/{{gres.conf, slurm.conf.colo, "
                           "job_submit.lua, colo-slurm.toml{}}}\n",
                           n.node, n.gpus.size(), s.shard_mib, s.shards_per_gpu, o.out, s.mps ? ", colo-task-prolog" : "");
}

std::atomic<bool> g_stop{false};
void on_stop(int) { g_stop = true; }

void recover(const std::string& site_flag, double interval, bool once) {
  const slurm::SiteSettings site = slurm::load_site_settings(slurm::site_settings_path(site_flag));
  slurm::SlurmCommands cmds;
  slurm::RecoverAgent agent(site, cmds, std::cout);
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  std::cout << fmt::format("colo slurm recover: state {}, every {} s, hold code {}, step {} MiB, max {} retries\n",
                           site.state_dir, interval, site.hold_exit_code, site.step_mib, site.max_retries) << std::flush;
  while (!g_stop) {
    int failed = 0;
    try {
      failed = agent.step();
    } catch (const std::exception& e) {
      // --once: the caller (a cron job, a test) must see the pass fail.
      if (once) throw colo::UserError("colo slurm recover --once: the pass failed: " + colo::one_line(e.what()));
      // Slurm unreachable, a full disk, …: nothing is lost (plans are on disk before Slurm
      // changes), the next pass tries again.
      std::cout << "colo slurm recover: " << colo::one_line(e.what()) << " (retrying)\n" << std::flush;
    }
    if (once && failed > 0)
      throw colo::UserError(fmt::format("colo slurm recover --once: {} job(s) could not be handled this pass (logged above)", failed));
    if (once) return;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(interval);
    while (!g_stop && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// One GPU node's Weight kept at colo's ranking (node_weight.h); applied when it changes, and
// every minute regardless (scontrol's weights do not survive a slurmctld restart).
void node_weight(const std::string& site_flag, std::string node, double interval, bool once) {
  const slurm::SiteSettings site = slurm::load_site_settings(slurm::site_settings_path(site_flag));
  if (node.empty()) node = short_host_name();
  if (node.empty() || node.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
                          std::string::npos)
    throw colo::UserError(fmt::format("--node '{}': not a Slurm node name", colo::one_line(node)));
  std::string why;
  auto gpus = slurm::open_site_gpus(site, why);
  if (!gpus) throw colo::UserError("colo slurm node-weight: cannot read the GPUs: " + why);
  const auto devices = gpus->discover();
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  slurm::SlurmCommands cmds;
  int applied = -1;
  auto last_applied = std::chrono::steady_clock::now();
  // The first sample of a GPM device has no SMACT yet (a rate needs two): prime every device once.
  for (const auto& d : devices) {
    try {
      (void)gpus->sample(d.index);
    } catch (const std::exception&) {
    }
  }
  while (!g_stop) {
    const double wait = once ? 0.2 : interval;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait);
    while (!g_stop && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::vector<colo::GpuLoad> loads;
    std::string seen;
    for (const auto& d : devices) {
      colo::GpuLoad l;
      try {
        const auto s = gpus->sample(d.index);
        l.total_mib = s.memory.total_mib;
        l.used_mib = s.memory.used_mib;
        l.smact = s.smact;
        seen += fmt::format("{}GPU {} {}/{} MiB, SMACT {}", seen.empty() ? "" : "; ", d.index, l.used_mib, l.total_mib,
                            l.smact ? fmt::format("{:.0f} %", 100 * *l.smact) : std::string("n/a"));
      } catch (const std::exception& e) {
        l.healthy = false;
        seen += fmt::format("{}GPU {} unreadable ({})", seen.empty() ? "" : "; ", d.index, colo::one_line(e.what()));
      }
      loads.push_back(l);
    }
    const int w = colo::node_weight(loads, site.smact_cap);
    const auto now = std::chrono::steady_clock::now();
    if (w != applied || now - last_applied > std::chrono::minutes(1)) {
      try {
        cmds.set_node_weight(node, w);
        if (w != applied) std::cout << fmt::format("node {}: Weight={} ({})\n", node, w, seen) << std::flush;
        applied = w;
        last_applied = now;
      } catch (const colo::UserError& e) {
        if (once) throw;
        std::cout << "colo slurm node-weight: " << colo::one_line(e.what()) << " (retrying)\n" << std::flush;
      }
    }
    if (once) return;
  }
}

// Slurm runs the TaskProlog as the job's user with its environment; lines "export K=V" on
// stdout become the task's environment. On MPS nodes the limit is the job's shards in MiB, on
// its one visible device (ordinal 0: all of a job's shards come from one GPU).
void task_prolog(const std::string& site_flag) {
  const slurm::SiteSettings site = slurm::load_site_settings(slurm::site_settings_path(site_flag));
  const char* shards = std::getenv("SLURM_SHARDS_ON_NODE");
  if (!site.mps || !shards || !*shards) return;
  const auto n = colo::parse_integer(shards, "SLURM_SHARDS_ON_NODE", 1, slurm::kMaxShardsPerNode);
  std::cout << fmt::format("export CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0={}M\n", n * site.shard_mib);
}

colo::cli::RegisterCommand reg_slurm([](CLI::App& app) {
  CLI::App* s = app.add_subcommand("slurm", "colo on a Slurm cluster: node configuration, OOM recovery service");
  s->require_subcommand(1);

  auto o = std::make_shared<ConfOpts>();
  CLI::App* c = s->add_subcommand("conf", "write gres.conf, slurm.conf lines, job_submit.lua and colo's settings for this node");
  c->add_option("--out", o->out, "directory to write into")->required();
  c->add_option("--node", o->node, "NodeName (default: the short host name)")->check(colo::cli::node_name());
  c->add_option("--fake-gpus", o->fake_gpus, "fake GPUs instead of NVML (tests, demos), e.g. 4x40GiB")
      ->check(colo::cli::non_empty());
  c->add_option("--fake-gpu-dir", o->fake_gpu_dir, "state directory of the fake GPUs");
  c->add_option("--nvml-library", o->nvml_library, "NVML library (default libnvidia-ml.so.1)");
  c->add_option("--shard-mib", o->shard, "GPU memory per shard (default 1GiB; doubled while a node would pass 1024 shards)");
  c->add_option("--dev-prefix", o->dev_prefix, "device files are PREFIX<index> (default /dev/nvidia)");
  c->add_option("--site-path", o->site_path, "where colo-slurm.toml will be installed (default /etc/colo/slurm.toml)");
  c->add_option("--state-dir", o->state_dir, "recovery agent state, history, attempt reports (default /var/lib/colo-slurm)");
  c->add_flag("--mps", o->mps, "nodes run MPS: a TaskProlog pins each job's device memory to its shards");
  colo::cli::add_real_flag(c, "--margin", o->margin, 0, 10, "added to an estimate before it becomes shards (default 0.10)");
  c->add_option("--oversize", o->oversize, "more shards than a GPU has: whole_gpu (default) or reject");
  colo::cli::add_int_flag(c, "--hold-exit-code", o->hold_exit_code, 1, 255, "RequeueExitHold code (default 75)");
  colo::cli::add_int_flag(c, "--max-retries", o->max_retries, 0, 100, "OOM requeues before giving up (default 3)");
  colo::cli::add_int_flag(c, "--default-shards", o->default_shards, 0, slurm::kMaxShardsPerNode,
                          "shards for a request without a size (default: a quarter of a GPU)");
  c->add_option("--step", o->step, "loose recovery step per OOM (default 5GiB)");
  c->callback([o] { conf(*o); });

  auto site = std::make_shared<std::string>();
  auto interval = std::make_shared<double>(5.0);
  auto once = std::make_shared<bool>(false);
  CLI::App* r = s->add_subcommand("recover", "the OOM recovery service: escalates and releases held jobs, records peaks");
  r->add_option("--site", *site, "colo's Slurm settings (default $COLO_SLURM_SITE or /etc/colo/slurm.toml)")
      ->check(colo::cli::non_empty());  // empty is an error, not the default file
  colo::cli::add_real_flag(r, "--interval", *interval, 0.1, 3600, "seconds between passes (default 5)");
  r->add_flag("--once", *once, "one pass, then exit");
  r->callback([site, interval, once] { recover(*site, *interval, *once); });

  auto wsite = std::make_shared<std::string>();
  auto wnode = std::make_shared<std::string>();
  auto winterval = std::make_shared<double>(10.0);
  auto wonce = std::make_shared<bool>(false);
  CLI::App* w = s->add_subcommand("node-weight", "keep this GPU node's Slurm Weight at colo's ranking (free memory, SMACT cap)");
  w->add_option("--site", *wsite, "colo's Slurm settings (default $COLO_SLURM_SITE or /etc/colo/slurm.toml)")
      ->check(colo::cli::non_empty());  // empty is an error, not the default file
  w->add_option("--node", *wnode, "this node's NodeName (default: the short host name)")->check(colo::cli::node_name());
  colo::cli::add_real_flag(w, "--interval", *winterval, 1, 3600, "seconds between updates (default 10)");
  w->add_flag("--once", *wonce, "measure, set the weight once, exit");
  w->callback([wsite, wnode, winterval, wonce] { node_weight(*wsite, *wnode, *winterval, *wonce); });

  auto psite = std::make_shared<std::string>();
  CLI::App* t = s->add_subcommand("task-prolog", "Slurm TaskProlog: print the job's MPS memory limit (MPS nodes)");
  t->add_option("--site", *psite, "colo's Slurm settings")
      ->check(colo::cli::non_empty());  // empty is an error, not the default file
  t->callback([psite] { task_prolog(*psite); });
});

}  // namespace
