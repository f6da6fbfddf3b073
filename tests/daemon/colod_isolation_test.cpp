// What one user's job or one failing read must never do to others: read the state, poison
// another user's history, leave processes behind, inherit colod's descriptors, or get a
// running job declared lost (and run twice) because colod ran out of descriptors.
// Every wait is on observed state (the API, a file a job writes), never on a sleep.
#include <linux/keyctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "daemon/job_cgroup.h"
#include "daemon/proc.h"
#include "daemon_harness.h"

namespace colo::daemon::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

unsigned mode_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0xFFFF;
  return st.st_mode & 07777;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A job that runs until `gate` exists.
std::string wait_for(const std::string& gate) { return "while [ ! -e " + gate + " ]; do sleep 0.2; done"; }

TEST(ColodIsolation, StateIsPrivateWhateverTheUmask) {
  TempDir dir;  // 0755, as a unit's StateDirectory= would make it
  const mode_t old = ::umask(0);  // the most permissive caller: colod must not depend on it
  ColodProcess d(dir.path(), "1x40GiB");
  ::umask(old);
  const std::uint64_t id = d.submit({"--env", "SECRET=hunter2", "--mem", "1GiB", "--", "/bin/sh", "-c", "echo out; echo err >&2"});
  ASSERT_EQ(d.wait_terminal(id).at("state"), "done");
  // Others may only traverse the state directory (to reach the socket), never list or read it.
  EXPECT_EQ(mode_of(dir.path()), 0711u);
  for (const char* f : {"/colo.db", "/colo.db-wal", "/colo.db-shm", "/colod.lock"}) {
    if (fs::exists(dir.path() + f)) {
      EXPECT_EQ(mode_of(dir.path() + f), 0600u) << f;
    }
  }
  EXPECT_EQ(mode_of(dir.path() + "/jobs"), 0700u);
  const std::string jd = dir.path() + "/jobs/" + std::to_string(id);
  EXPECT_EQ(mode_of(jd), 0700u);
  EXPECT_EQ(mode_of(jd + "/stdout.log"), 0600u);
  EXPECT_EQ(mode_of(jd + "/stderr.log"), 0600u);
  if (geteuid() == 0) {
    // nobody cannot read the database (where the job's SECRET is).
    const RunResult r = run_process({"/bin/cat", dir.path() + "/colo.db"}, 65534, 65534);
    EXPECT_NE(r.rc, 0);
    EXPECT_EQ(r.out.find("hunter2"), std::string::npos);
  }
}

TEST(ColodIsolation, HistoryIsKeptPerUserAndDirectory) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to act as a second user";
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  const std::string gate = dir.path() + "/gate";
  // Root's run asks for 32 GiB and really peaks at 1 GiB: its history says ~1.1 GiB.
  const std::vector<std::string> cmd{"/bin/sh", "-c",
                                     binary("colo-fake-job") + " --mem 1GiB --hold inf & p=$!; " + wait_for(gate) +
                                         "; kill $p; wait $p; exit 0"};
  std::vector<std::string> args{"--workdir", "/", "--mem", "32GiB", "--"};
  args.insert(args.end(), cmd.begin(), cmd.end());
  const std::uint64_t first = d.submit(args);
  const std::string fid = std::to_string(first);
  ASSERT_TRUE(wait_until([&] { return !d.colo_json({"show", fid, "--json"}).at("attempts")[0].at("peak_mib").is_null(); }, 60s));
  std::ofstream(gate).put('x');
  ASSERT_EQ(d.wait_terminal(first).at("state"), "done");

  // nobody submits the very same command in the same directory: its own 32 GiB request stands.
  std::vector<std::string> sub{"submit"};
  sub.insert(sub.end(), args.begin(), args.end());
  const RunResult r = d.colo(sub, 65534);
  ASSERT_EQ(r.rc, 0) << r.err;
  const json other = d.colo_json({"show", std::to_string(std::stoull(r.out)), "--json"});
  EXPECT_EQ(other.at("need_source"), "user") << other.dump(2);
  EXPECT_EQ(other.at("need_mib"), 32 * 1024);
  d.colo({"cancel", std::to_string(std::stoull(r.out))});
  // The same user in another directory: another job.
  std::vector<std::string> elsewhere = args;
  elsewhere[1] = "/tmp";
  const json moved = d.colo_json({"show", std::to_string(d.submit(elsewhere)), "--json"});
  EXPECT_EQ(moved.at("need_source"), "user") << moved.dump(2);
  d.colo({"cancel", std::to_string(moved.at("id").get<std::uint64_t>())});
  // Root again, same directory: history applies.
  const json again = d.colo_json({"show", std::to_string(d.submit(args)), "--json"});
  EXPECT_EQ(again.at("need_source"), "history") << again.dump(2);
  EXPECT_LT(again.at("need_mib").get<int>(), 2048);
  d.colo({"cancel", std::to_string(again.at("id").get<std::uint64_t>())});
}

// What a job inherits from colod, it must not (an independent packaging review, 2026-11-26):
// colod's session keyring (systemd gives a service one: every user's job shared it, and a key
// one user's job added was readable by the next user's), colod's umask 077 (files the job
// writes for colleagues came out private) and colod's raised descriptor limit.
TEST(ColodIsolation, JobsGetTheirOwnKeyringTheSubmittersUmaskAndTheUsualDescriptorLimit) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to act as a second user";
  const long own_keyring = ::syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
  if (own_keyring < 0) GTEST_SKIP() << "no session keyrings here: " << std::strerror(errno);
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  if (before.rlim_max < 2048) GTEST_SKIP() << "hard descriptor limit too low to tell the soft one apart";
  rlimit low = before;
  low.rlim_cur = 1000;  // colod raises its own soft limit to the hard one; jobs get 1000 back
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  ::setrlimit(RLIMIT_NOFILE, &before);
  // The job prints its umask, its soft descriptor limit and its session keyring's id.
  const std::string py =
      "import ctypes, platform; nr = {'x86_64': 250, 'aarch64': 219}[platform.machine()]; "
      "print(ctypes.CDLL(None).syscall(nr, 0, -3, 0))";
  const std::vector<std::string> job{"--mem", "1GiB", "--workdir", "/", "--", "/bin/sh", "-c",
                                     "umask; ulimit -Sn; /usr/bin/python3 -c \"" + py + "\""};
  std::vector<std::string> sub{"submit"};
  sub.insert(sub.end(), job.begin(), job.end());
  const mode_t saved = ::umask(027);  // the submitter's mask travels with the job
  const RunResult r = d.colo(sub, 65534);
  ::umask(saved);
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::uint64_t nobody_job = std::stoull(r.out);
  const std::uint64_t root_job = d.submit(job);
  std::vector<std::string> out;
  for (const std::uint64_t id : {nobody_job, root_job}) {
    ASSERT_EQ(d.wait_terminal(id).at("state"), "done") << d.colo({"logs", std::to_string(id), "--stderr"}).out;
    out.push_back(d.colo({"logs", std::to_string(id)}).out);
  }
  std::istringstream a(out[0]), b(out[1]);
  std::string umask_a, limit_a, key_a, umask_b, limit_b, key_b;
  a >> umask_a >> limit_a >> key_a;
  b >> umask_b >> limit_b >> key_b;
  EXPECT_EQ(umask_a, "0027") << out[0];
  EXPECT_EQ(umask_b, fmt::format("{:04o}", saved)) << out[1];
  EXPECT_EQ(limit_a, "1000");
  EXPECT_EQ(limit_b, "1000");
  EXPECT_NE(key_a, std::to_string(own_keyring)) << "the job joined colod's session keyring";
  EXPECT_NE(key_b, std::to_string(own_keyring));
  EXPECT_NE(key_a, key_b) << "two users' jobs share a session keyring";
}

// Root colod on fake GPUs (demos, tests, a site trying colo out): another user's fake training
// job reaches the fake NVML's state (colod's umask 077 made its directory root's alone).
TEST(ColodIsolation, AnotherUsersFakeJobReachesTheFakeNvml) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to act as a second user";
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  const RunResult r = d.colo({"submit", "--mem", "2GiB", "--workdir", "/", "--", binary("colo-fake-job"), "--mem",
                              "1GiB", "--hold", "0"},
                             65534);
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::uint64_t id = std::stoull(r.out);
  EXPECT_EQ(d.wait_terminal(id).at("state"), "done") << d.colo({"logs", std::to_string(id), "--stderr"}).out;
}

TEST(ColodIsolation, NothingAJobStartsOutlivesIt) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  const std::string pidfile = dir.path() + "/escaped.pid", gate = dir.path() + "/gate";
  // The job detaches a grandchild into its own session (setsid), as daemons and some launchers
  // do, then waits for the gate and exits 0.
  const std::uint64_t id = d.submit(
      {"--mem", "1GiB", "--", "/bin/sh", "-c",
       "setsid /bin/sh -c 'echo $$ > " + pidfile + ".tmp; mv " + pidfile + ".tmp " + pidfile +
           "; exec sleep 1000' </dev/null >/dev/null 2>&1 & " + wait_for(gate)});
  pid_t escaped = 0;
  ASSERT_TRUE(wait_until(
      [&] {
        std::ifstream in(pidfile);
        return static_cast<bool>(in >> escaped);
      },
      60s, 20ms));
  std::optional<ProcStat> st;
  ASSERT_TRUE(wait_until([&] { return (st = read_proc_stat(escaped)) && st->session == escaped; }, 30s, 20ms));
  std::ofstream(gate).put('x');
  ASSERT_EQ(d.wait_terminal(id).at("state"), "done");
  // The shim kills and reaps every descendant before it records the job's end.
  EXPECT_EQ(process_liveness(escaped, st->start_ticks), Liveness::Gone);
  if (process_liveness(escaped, st->start_ticks) != Liveness::Gone) ::kill(escaped, SIGKILL);
}

TEST(ColodIsolation, JobsInheritOnlyStdio) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  // The shell lists its own descriptors (skipping the one its glob had open).
  const std::uint64_t id = d.submit({"--mem", "1GiB", "--", "/bin/sh", "-c",
                                     "for f in /proc/$$/fd/*; do [ -e \"$f\" ] && echo \"${f##*/}\"; done; true"});
  ASSERT_EQ(d.wait_terminal(id).at("state"), "done");
  std::set<std::string> fds;
  std::istringstream out(d.colo({"logs", std::to_string(id)}).out);
  for (std::string l; std::getline(out, l);) fds.insert(l);
  EXPECT_EQ(fds, (std::set<std::string>{"0", "1", "2"}));
}


// Where the host has a writable cgroup2 hierarchy (root on a cgroup2 or hybrid host), every
// attempt runs in its own leaf, accounted and removed with it.
TEST(ColodIsolation, EachAttemptRunsInItsOwnCgroupWhereTheHostAllows) {
  if (const std::string why = no_cgroups_here(); !why.empty()) GTEST_SKIP() << "no writable cgroup2 hierarchy here: " << why;
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  const std::uint64_t id = d.submit({"--mem", "1GiB", "--", "/bin/sh", "-c", "grep '^0::' /proc/self/cgroup"});
  const json j = d.wait_terminal(id);
  ASSERT_EQ(j.at("state"), "done") << j.dump(2);
  const std::string leaf = "colo-job-" + std::to_string(id) + "-1";
  const std::string out = d.colo({"logs", std::to_string(id)}).out;
  EXPECT_NE(out.find("/" + leaf + "-"), std::string::npos) << out;  // + the shim's pid
  const std::string cg = json::parse(slurp(dir.path() + "/jobs/" + std::to_string(id) + "/attempt-1/exit.json")).at("cgroup");
  EXPECT_NE(cg.find(leaf), std::string::npos);
  EXPECT_FALSE(fs::exists(cg)) << "the leaf is removed with the attempt";
  bool accounted = false;
  for (const json& e : j.at("events")) accounted = accounted || e.at("message").get<std::string>().find(", cpu ") != std::string::npos;
  EXPECT_TRUE(accounted) << j.dump(2);
}

// A shim killed from outside (kill -9): the attempt is lost and the job requeued — but what the
// job detached from its session is still running. It is in the attempt's cgroup, and colod
// empties that cgroup before the job runs again: never two copies at once.
TEST(ColodIsolation, ALostShimsDetachedProcessesDieBeforeTheJobRunsAgain) {
  if (const std::string why = no_cgroups_here(); !why.empty()) GTEST_SKIP() << "no writable cgroup2 hierarchy here: " << why;
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  const std::string p = dir.path() + "/", gate = p + "gate";
  auto publish = [](const std::string& what, const std::string& file) {
    return "echo " + what + " > " + file + ".tmp; mv " + file + ".tmp " + file;
  };
  const std::uint64_t id = d.submit(
      {"--mem", "1GiB", "--", "/bin/sh", "-c",
       "setsid /bin/sh -c '" + publish("$$", p + "escaped-$COLO_ATTEMPT") + "; exec tail -f /dev/null' </dev/null >/dev/null 2>&1 & " +
           publish("$PPID", p + "shim-$COLO_ATTEMPT") + "; " + fifo_gate(gate)});
  auto read_pid = [](const std::string& file) {
    pid_t v = 0;
    std::ifstream in(file);
    in >> v;
    return v;
  };
  pid_t escaped = 0, shim = 0;
  ASSERT_TRUE(wait_until([&] { return (escaped = read_pid(p + "escaped-1")) > 0 && (shim = read_pid(p + "shim-1")) > 0; },
                         60s, 20ms));
  std::optional<ProcStat> st;
  ASSERT_TRUE(wait_until([&] { return (st = read_proc_stat(escaped)) && st->session == escaped; }, 30s, 20ms));
  ASSERT_EQ(::kill(shim, SIGKILL), 0);
  // Attempt 2 has started (its own detached process published itself): by then the first copy is gone.
  ASSERT_TRUE(wait_until([&] { return read_pid(p + "escaped-2") > 0; }, 60s, 20ms)) << d.log();
  EXPECT_EQ(process_liveness(escaped, st->start_ticks), Liveness::Gone);
  if (process_liveness(escaped, st->start_ticks) != Liveness::Gone) ::kill(escaped, SIGKILL);
  open_gate(gate);
  const json j = d.wait_terminal(id);
  EXPECT_EQ(j.at("state"), "done") << j.dump(2);
}

// colod out of descriptors cannot read /proc or exit.json. That proves nothing: the running job
// must not be declared lost (today's fix) — it is re-checked until colod can see again, and runs once.
TEST(ColodIsolation, OutOfDescriptorsNeverDeclaresARunningJobLost) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  const std::string ran = dir.path() + "/ran", gate = dir.path() + "/gate";
  const std::uint64_t id =
      d.submit({"--mem", "1GiB", "--", "/bin/sh", "-c", "echo $COLO_JOB_ID >> " + ran + "; " + wait_for(gate)});
  ASSERT_TRUE(wait_until([&] { return fs::exists(ran); }, 60s, 20ms));
  ASSERT_TRUE(wait_until([&] { return d.colo_json({"show", std::to_string(id), "--json"}).at("state") == "running"; }, 60s));
  // Starve colod: the kernel hands out the lowest free descriptor and fails (EMFILE) when that
  // number reaches the soft limit, so the limit becomes colod's lowest free descriptor.
  rlimit old{};
  ASSERT_EQ(prlimit(d.pid(), RLIMIT_NOFILE, nullptr, &old), 0);
  std::set<long> open_fds;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(d.pid()) + "/fd"))
    open_fds.insert(std::stol(e.path().filename().string()));
  rlimit tight = old;
  tight.rlim_cur = 0;
  while (open_fds.count(static_cast<long>(tight.rlim_cur))) ++tight.rlim_cur;
  ASSERT_EQ(prlimit(d.pid(), RLIMIT_NOFILE, &tight, nullptr), 0);
  const bool noticed = wait_until([&] { return d.log().find("cannot tell whether its job still runs") != std::string::npos; }, 60s, 50ms);
  ASSERT_EQ(prlimit(d.pid(), RLIMIT_NOFILE, &old, nullptr), 0);
  EXPECT_TRUE(noticed) << d.log();
  std::ofstream(gate).put('x');
  const json j = d.wait_terminal(id);
  EXPECT_EQ(j.at("state"), "done") << j.dump(2) << d.log();
  EXPECT_EQ(j.at("attempt_count"), 1) << j.dump(2);
  ASSERT_EQ(j.at("attempts").size(), 1u) << j.dump(2);
  EXPECT_EQ(j.at("attempts")[0].at("outcome"), "done");
  EXPECT_EQ(slurp(ran), std::to_string(id) + "\n");
  EXPECT_TRUE(d.alive());
}

}  // namespace
}  // namespace colo::daemon::testing
