// The real build/colod under hostile clients: connections that never read their (large)
// answers, that send half a request and go silent, or that send nothing; and a request whose
// JSON nests 100 000 levels deep. colod must keep answering and scheduling. No timing
// assertions: the normal client's own 60 s timeout is the only bound.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "daemon/client/job_request.h"
#include "daemon_harness.h"

namespace colo::daemon::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

int connect_to(const std::string& sock) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, sock.c_str(), sizeof(addr.sun_path) - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `bytes`, half-closes, reads the whole answer.
std::string exchange(const std::string& sock, const std::string& bytes) {
  const int fd = connect_to(sock);
  if (fd < 0) return "";
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

struct Fds {
  std::vector<int> fds;
  ~Fds() {
    for (int fd : fds) ::close(fd);
  }
};

TEST(ColodHostile, SilentAndNonReadingClientsDoNotStallTheApiOrScheduling) {
  TempDir dir;
  ColodProcess d(dir.path(), "2x40GiB");
  // A job with ~2 MB of output: its log is a large answer that the hogs will not read.
  const std::uint64_t noisy =
      d.submit({"--mem", "1GiB", "--", "/bin/sh", "-c", "head -c 2000000 /dev/zero | tr '\\0' x"});
  ASSERT_EQ(d.wait_terminal(noisy).at("state"), "done");

  Fds hostile;
  const std::string hog = "GET /v1/jobs/" + std::to_string(noisy) + "/logs?max=1048576 HTTP/1.1\r\n\r\n";
  for (int i = 0; i < 100; ++i) {
    const int fd = connect_to(d.socket());
    ASSERT_GE(fd, 0) << "connection " << i;
    hostile.fds.push_back(fd);
    if (i < 30) continue;  // silent
    const std::string bytes = i < 60 ? std::string("GET /v1/gpus HT") : hog;
    // colod may already have closed it (more than its per-user cap of connections): fine.
    [[maybe_unused]] const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }

  // A normal client is answered while all of that is pending…
  const RunResult gpus = d.colo({"gpus", "--json"});
  ASSERT_EQ(gpus.rc, 0) << gpus.err;
  EXPECT_EQ(json::parse(gpus.out).size(), 2u);
  // …and scheduling goes on: a job submitted now runs to completion.
  const std::uint64_t probe = d.submit({"--mem", "1GiB", "--", "/bin/true"});
  EXPECT_EQ(d.wait_terminal(probe).at("state"), "done");
  EXPECT_TRUE(d.alive());
}

TEST(ColodHostile, DeeplyNestedJsonIsRefusedAndColodStaysUp) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  // 100 000 nested arrays in 200 kB: enough to overflow the stack of any recursive walk.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string body = R"({"argv": ["/bin/true"], "fingerprint_inputs": {"x": )" + deep + "}}";
  const std::string resp = exchange(d.socket(), http_post("/v1/jobs", body));
  EXPECT_EQ(resp.substr(0, 12), "HTTP/1.1 400") << resp.substr(0, 300);
  EXPECT_NE(resp.find(fmt::format("nested deeper than {} levels", kMaxJsonNesting)), std::string::npos)
      << resp.substr(0, 300);
  const std::string drain = exchange(d.socket(), http_post("/v1/gpus/0/drain", R"({"reason": )" + deep + "}"));
  EXPECT_EQ(drain.substr(0, 12), "HTTP/1.1 400") << drain.substr(0, 300);

  ASSERT_TRUE(d.alive()) << d.log();
  EXPECT_EQ(d.colo({"gpus"}).rc, 0);
  // Ordinary nesting is still accepted, and nothing above created a job.
  const std::string ok = exchange(
      d.socket(), http_post("/v1/jobs", R"({"argv": ["/bin/true"], "fingerprint_inputs": {"x": [[{"y": [1]}]]}})"));
  EXPECT_EQ(ok.substr(0, 12), "HTTP/1.1 201") << ok.substr(0, 300);
  EXPECT_NE(ok.find("\"id\":1,"), std::string::npos) << ok.substr(0, 300);

  // An error quoting request text stays one line: a decoded newline is shown escaped.
  const std::string gpu = exchange(d.socket(), http_post("/v1/gpus/%0A/drain", "{}"));
  EXPECT_EQ(gpu.substr(0, 12), "HTTP/1.1 404") << gpu.substr(0, 300);
  EXPECT_NE(gpu.find(R"({"error":"no managed GPU '\\n'"})"), std::string::npos) << gpu;
  const std::string id = exchange(d.socket(), "GET /v1/jobs/1%0Ax HTTP/1.1\r\nHost: c\r\n\r\n");
  EXPECT_NE(id.find(R"('1\\nx' is not a job id)"), std::string::npos) << id;
}

}  // namespace
}  // namespace colo::daemon::testing
