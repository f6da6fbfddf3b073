// The real ApiServer on a temporary socket with a trivial handler, driven by its own handle()
// in this thread: clients are non-blocking sockets in the same process, so every step is
// synchronous (a Unix-socket send is in the peer's queue when it returns) and nothing depends
// on timing. Deadlines are driven by the injected `now_mono`.
#include "daemon/api_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "daemon/client/job_request.h"
#include "daemon_harness.h"

namespace colo::daemon {
namespace {

using testing::TempDir;

constexpr std::size_t kBig = 4u << 20;  // far more than a Unix socket buffers

HttpResponse test_handler(const HttpRequest& r, const Peer& p, int* calls, std::vector<uid_t>* order) {
  ++*calls;
  order->push_back(p.uid);
  if (r.path == "/big") return HttpResponse{200, "text/plain", std::string(kBig, 'x'), {}};
  if (r.path == "/huge") return HttpResponse{200, "text/plain", std::string(kBig * 8, 'y'), {}};
  return HttpResponse{200, "application/json", "{\"path\":\"" + r.path + "\",\"uid\":" + std::to_string(p.uid) + "}", {}};
}

struct Fixture {
  explicit Fixture(ServerLimits limits = {})
      : server(dir.path() + "/api.sock", limits,
               [this](const HttpRequest& r, const Peer& p) { return test_handler(r, p, &calls, &order); }) {}
  // One turn of the daemon loop: poll without waiting, then handle().
  void pump(double now = 0) {
    std::vector<pollfd> fds;
    server.add_pollfds(fds);
    ::poll(fds.data(), fds.size(), 0);
    server.handle(fds, now);
  }
  TempDir dir;
  int calls = 0;
  std::vector<uid_t> order;  // the caller of each handler call
  ApiServer server;
};

// A non-blocking client socket.
struct Client {
  explicit Client(const std::string& path) {
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    connected = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Client() {
    if (fd >= 0) ::close(fd);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  void send_all(const std::string& s) const {
    ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size()));
  }
  // Reads what is there; true once the server closed the connection.
  bool read_some() {
    char buf[65536];
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n > 0) {
        got.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
      eof = true;
      return true;  // 0 (closed) or ECONNRESET
    }
  }
  bool readable() const {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
  }
  HttpResponse response() const { return parse_response(got); }
  int fd = -1;
  bool connected = false;
  bool eof = false;
  std::string got;
};

const std::string kSmall = "GET /small HTTP/1.1\r\nHost: t\r\n\r\n";

// Pumps the server and reads `c` until the server closes it; at most `turns` turns.
bool pump_until_answered(Fixture& f, Client& c, int turns = 1000, double now = 0) {
  for (int i = 0; i < turns; ++i) {
    f.pump(now);
    if (c.read_some()) return true;
  }
  return false;
}

TEST(ApiServer, AnswersARequest) {
  Fixture f;
  Client c(f.server.path());
  ASSERT_TRUE(c.connected);
  c.send_all(kSmall);
  ASSERT_TRUE(pump_until_answered(f, c));
  const HttpResponse r = c.response();
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("/small"), std::string::npos);
  EXPECT_EQ(f.calls, 1);
  EXPECT_EQ(f.server.connection_count(), 0u);
}

TEST(ApiServer, HeadAnswersGetsHeadWithItsLengthAndNoBody) {
  Fixture f;
  Client c(f.server.path());
  ASSERT_TRUE(c.connected);
  c.send_all("HEAD /big HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(pump_until_answered(f, c));
  const auto end = c.got.find("\r\n\r\n");
  ASSERT_NE(end, std::string::npos);
  EXPECT_EQ(c.got.size(), end + 4) << "a body after the head";
  EXPECT_NE(c.got.find("Content-Length: " + std::to_string(kBig) + "\r\n"), std::string::npos) << c.got.substr(0, end);
}

TEST(ApiServer, AClientThatNeverReadsDoesNotStallOthers) {
  Fixture f;
  Client hog(f.server.path());
  hog.send_all("GET /big HTTP/1.1\r\n\r\n");
  for (int i = 0; i < 100 && f.server.buffered_bytes() == 0; ++i) f.pump();
  ASSERT_GT(f.server.buffered_bytes(), 0u) << "the big response should be waiting for the hog to read";

  Client other(f.server.path());
  other.send_all(kSmall);
  ASSERT_TRUE(pump_until_answered(f, other));
  EXPECT_EQ(other.response().status, 200);
  EXPECT_NE(other.response().body.find("/small"), std::string::npos);

  // …while the hog's answer is still pending, on both ends.
  EXPECT_EQ(f.server.connection_count(), 1u);
  EXPECT_GT(f.server.buffered_bytes(), 0u);
  EXPECT_TRUE(hog.readable());
  EXPECT_FALSE(hog.eof);

  // The hog still gets its whole answer once it reads, and no handler ran twice.
  ASSERT_TRUE(pump_until_answered(f, hog, 100000));
  const HttpResponse big = hog.response();
  EXPECT_EQ(big.status, 200);
  EXPECT_EQ(big.body.size(), kBig);
  EXPECT_EQ(f.calls, 2);
  EXPECT_EQ(f.server.buffered_bytes(), 0u);
}

TEST(ApiServer, ManyHogsAndSilentClientsDoNotStallANormalOne) {
  Fixture f;
  std::vector<std::unique_ptr<Client>> hostile;
  for (int i = 0; i < 30; ++i) {
    hostile.push_back(std::make_unique<Client>(f.server.path()));
    const int kind = i % 3;
    if (kind == 0) hostile.back()->send_all("GET /big HTTP/1.1\r\n\r\n");
    if (kind == 1) hostile.back()->send_all("GET /sma");
    f.pump();
  }
  Client normal(f.server.path());
  normal.send_all(kSmall);
  ASSERT_TRUE(pump_until_answered(f, normal));
  EXPECT_EQ(normal.response().status, 200);
  EXPECT_EQ(f.calls, 11);  // ten hogs and the normal client
  EXPECT_EQ(f.server.connection_count(), 30u);
}

TEST(ApiServer, SilentPartialRequestIsClosedAtItsDeadline) {
  ServerLimits l;
  l.request_timeout_s = 10;
  Fixture f(l);
  Client c(f.server.path());
  f.pump(100.0);  // accepted at t = 100
  c.send_all("GET /small HTT");
  f.pump(100.0);
  f.pump(109.9);
  EXPECT_EQ(f.server.connection_count(), 1u);
  EXPECT_FALSE(c.read_some());
  f.pump(110.1);
  EXPECT_EQ(f.server.connection_count(), 0u);
  ASSERT_TRUE(c.read_some());
  EXPECT_EQ(c.response().status, 408);
  EXPECT_NE(c.response().body.find("not completed within 10 s"), std::string::npos);
  EXPECT_EQ(f.calls, 0);
}

TEST(ApiServer, ResponseNotReadInTimeIsDropped) {
  ServerLimits l;
  l.response_timeout_s = 10;
  Fixture f(l);
  Client hog(f.server.path());
  hog.send_all("GET /big HTTP/1.1\r\n\r\n");
  for (int i = 0; i < 10; ++i) f.pump(50.0);
  EXPECT_EQ(f.calls, 1);
  EXPECT_GT(f.server.buffered_bytes(), 0u);
  f.pump(59.9);
  EXPECT_EQ(f.server.connection_count(), 1u);
  f.pump(60.1);
  EXPECT_EQ(f.server.connection_count(), 0u);
  EXPECT_EQ(f.server.buffered_bytes(), 0u);
  EXPECT_EQ(f.calls, 1);  // dropped, never re-run
}

TEST(ApiServer, ByteAtATimeRequestIsAnswered) {
  Fixture f;
  Client c(f.server.path());
  const std::string req = "POST /v1/slow?x=1 HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello";
  for (char ch : req) {
    c.send_all(std::string(1, ch));
    f.pump();
    EXPECT_FALSE(c.eof);
  }
  ASSERT_TRUE(pump_until_answered(f, c));
  EXPECT_EQ(c.response().status, 200);
  EXPECT_NE(c.response().body.find("/v1/slow"), std::string::npos);
  EXPECT_EQ(f.calls, 1);
}

TEST(ApiServer, PerUserCapClosesThatUsersOldestConnection) {
  ServerLimits l;
  l.max_connections_per_uid = 3;
  Fixture f(l);
  std::vector<std::unique_ptr<Client>> cs;
  for (int i = 0; i < 4; ++i) {
    cs.push_back(std::make_unique<Client>(f.server.path()));
    cs.back()->send_all("GET /partial");
    f.pump();
  }
  EXPECT_EQ(f.server.connection_count(), 3u);
  ASSERT_TRUE(cs[0]->read_some());
  EXPECT_EQ(cs[0]->response().status, 503);
  for (int i = 1; i < 4; ++i) EXPECT_FALSE(cs[i]->read_some()) << i;
  // The newest connection is served normally.
  cs[3]->send_all(" HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(pump_until_answered(f, *cs[3]));
  EXPECT_EQ(cs[3]->response().status, 200);
}

TEST(ApiServer, EvictionTakesAnIncompleteRequestBeforeADrainingResponse) {
  ServerLimits l;
  l.max_connections_per_uid = 2;
  Fixture f(l);
  Client reader(f.server.path());  // oldest: its (big) answer is draining
  reader.send_all("GET /big HTTP/1.1\r\n\r\n");
  for (int i = 0; i < 10; ++i) f.pump();
  ASSERT_EQ(f.calls, 1);
  Client silent(f.server.path());
  f.pump();
  Client fresh(f.server.path());
  fresh.send_all(kSmall);
  f.pump();
  EXPECT_TRUE(silent.read_some());
  EXPECT_EQ(silent.response().status, 503);
  EXPECT_FALSE(reader.eof);
  ASSERT_TRUE(pump_until_answered(f, fresh));
  EXPECT_EQ(fresh.response().status, 200);
  ASSERT_TRUE(pump_until_answered(f, reader, 100000));
  EXPECT_EQ(reader.response().body.size(), kBig);
}

TEST(ApiServer, AConnectionGetsOneTurnBeforeItCanBeEvicted) {
  ServerLimits l;
  l.max_connections_per_uid = 2;
  l.accepts_per_turn = 8;
  Fixture f(l);
  // Four connect before the server's turn: two fit, the other two are refused, not traded for
  // the two accepted in the same turn.
  std::vector<std::unique_ptr<Client>> cs;
  for (int i = 0; i < 4; ++i) {
    cs.push_back(std::make_unique<Client>(f.server.path()));
    cs.back()->send_all(kSmall);
  }
  f.pump();
  EXPECT_EQ(f.server.connection_count(), 2u);
  for (int i = 2; i < 4; ++i) {
    ASSERT_TRUE(cs[i]->read_some()) << i;
    EXPECT_EQ(cs[i]->response().status, 503);
    EXPECT_NE(cs[i]->response().body.find("connection limit"), std::string::npos);
  }
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(pump_until_answered(f, *cs[i])) << i;
    EXPECT_EQ(cs[i]->response().status, 200);
  }
  EXPECT_EQ(f.calls, 2);
}

TEST(ApiServer, LoweredConnectionCapEvictsTheOldest) {
  Fixture f;
  std::vector<std::unique_ptr<Client>> cs;
  for (int i = 0; i < 5; ++i) {
    cs.push_back(std::make_unique<Client>(f.server.path()));
    f.pump();
  }
  EXPECT_EQ(f.server.connection_count(), 5u);
  f.server.set_max_connections(2);
  f.pump();
  EXPECT_EQ(f.server.connection_count(), 2u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(cs[i]->read_some()) << i;
  for (int i = 3; i < 5; ++i) EXPECT_FALSE(cs[i]->read_some()) << i;
  // At the cap, a new connection replaces the oldest.
  Client late(f.server.path());
  late.send_all(kSmall);
  ASSERT_TRUE(pump_until_answered(f, late));
  EXPECT_EQ(late.response().status, 200);
  EXPECT_TRUE(cs[3]->read_some());
  EXPECT_FALSE(cs[4]->read_some());
}

// Connects as `uid` (effective uid at connect() is what SO_PEERCRED reports).
std::unique_ptr<Client> connect_as(const std::string& path, uid_t uid) {
  if (::seteuid(uid) != 0) return nullptr;
  auto c = std::make_unique<Client>(path);
  if (::seteuid(0) != 0) std::abort();
  return c;
}

TEST(ApiServer, AFullServerEvictsTheHeaviestUserNotANewcomer) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to connect as a second user";
  ServerLimits l;
  l.max_connections = 4;
  l.max_connections_per_uid = 10;
  Fixture f(l);
  std::vector<std::unique_ptr<Client>> root;
  for (int i = 0; i < 4; ++i) {
    root.push_back(std::make_unique<Client>(f.server.path()));
    f.pump();
  }
  auto other = connect_as(f.server.path(), 65534);
  ASSERT_TRUE(other && other->connected);
  other->send_all(kSmall);
  ASSERT_TRUE(pump_until_answered(f, *other));
  EXPECT_EQ(other->response().status, 200);
  EXPECT_NE(other->response().body.find("\"uid\":65534"), std::string::npos);
  EXPECT_TRUE(root[0]->read_some());  // root held the most: its oldest went
  for (int i = 1; i < 4; ++i) EXPECT_FALSE(root[i]->read_some()) << i;
  // A second user's silent connection is not evicted by root opening more.
  auto quiet = connect_as(f.server.path(), 65534);
  f.pump();
  for (int i = 0; i < 3; ++i) {
    root.push_back(std::make_unique<Client>(f.server.path()));
    f.pump();
  }
  EXPECT_FALSE(quiet->read_some());
  EXPECT_EQ(f.server.connection_count(), 4u);
}

TEST(ApiServer, UsersTakeTurnsAtTheHandler) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to connect as a second user";
  ServerLimits l;
  l.requests_per_turn = 1;
  l.handler_budget_s = 0;
  Fixture f(l);
  std::vector<std::unique_ptr<Client>> flood;
  for (int i = 0; i < 4; ++i) {
    flood.push_back(std::make_unique<Client>(f.server.path()));
    flood.back()->send_all(kSmall);
  }
  auto other = connect_as(f.server.path(), 65534);
  ASSERT_TRUE(other && other->connected);
  other->send_all(kSmall);
  f.pump();  // accept all five
  f.pump();  // read all five; the first (root) is served
  f.pump();  // root was served last: the other user goes next, ahead of root's backlog
  ASSERT_EQ(f.order.size(), 2u);
  EXPECT_EQ(f.order[0], 0u);
  EXPECT_EQ(f.order[1], 65534u);
  EXPECT_TRUE(other->read_some());
  EXPECT_EQ(other->response().status, 200);
  for (auto& c : flood) ASSERT_TRUE(pump_until_answered(f, *c));
  EXPECT_EQ(f.calls, 5);
}

TEST(ApiServer, HandlerCallsPerTurnAreBoundedAndEachRequestRunsOnce) {
  ServerLimits l;
  l.requests_per_turn = 2;
  l.handler_budget_s = 0;  // count only: this test must not depend on how fast the machine is
  l.accepts_per_turn = 3;
  Fixture f(l);
  std::vector<std::unique_ptr<Client>> cs;
  for (int i = 0; i < 7; ++i) {
    cs.push_back(std::make_unique<Client>(f.server.path()));
    cs.back()->send_all(kSmall);
  }
  f.pump();
  EXPECT_EQ(f.server.connection_count(), 3u);  // accepts bounded
  f.pump();
  EXPECT_EQ(f.calls, 2);  // handler calls bounded
  // Pending work keeps poll() from sleeping: some descriptor is ready right now.
  std::vector<pollfd> fds;
  f.server.add_pollfds(fds);
  EXPECT_GT(::poll(fds.data(), fds.size(), 0), 0);
  for (auto& c : cs) ASSERT_TRUE(pump_until_answered(f, *c));
  EXPECT_EQ(f.calls, 7);
  for (auto& c : cs) EXPECT_EQ(c->response().status, 200);
}

TEST(ApiServer, OversizedResponseBecomesAnError) {
  ServerLimits l;
  l.max_response_bytes = 1u << 20;
  Fixture f(l);
  Client c(f.server.path());
  c.send_all("GET /big HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(pump_until_answered(f, c));
  EXPECT_EQ(c.response().status, 500);
  EXPECT_NE(c.response().body.find("exceeds colod's limit"), std::string::npos);
}

TEST(ApiServer, BufferedOutputCapDropsTheOldestWriterOfTheHeaviestUser) {
  ServerLimits l;
  l.max_buffered_bytes = kBig * 2;
  Fixture f(l);
  std::vector<std::unique_ptr<Client>> hogs;
  for (int i = 0; i < 3; ++i) {
    hogs.push_back(std::make_unique<Client>(f.server.path()));
    hogs.back()->send_all("GET /big HTTP/1.1\r\n\r\n");
    for (int k = 0; k < 3; ++k) f.pump();
  }
  EXPECT_LE(f.server.buffered_bytes(), kBig * 2);
  EXPECT_EQ(f.server.connection_count(), 2u);
  ASSERT_TRUE(pump_until_answered(f, *hogs[0]));  // closed, its answer cut short
  EXPECT_LT(hogs[0]->got.size(), kBig);
  ASSERT_TRUE(pump_until_answered(f, *hogs[2], 100000));
  EXPECT_EQ(hogs[2]->response().body.size(), kBig);
}

TEST(ApiServer, DescriptorExhaustionPausesAcceptingInsteadOfSpinning) {
  Fixture f;
  Client a(f.server.path());
  Client b(f.server.path());
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  const int lowest_free = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(lowest_free, 0);
  ::close(lowest_free);
  rlimit tight = old;
  tight.rlim_cur = static_cast<rlim_t>(lowest_free);  // no new descriptor fits
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  f.pump(0.0);
  const bool paused = f.server.accept_paused();
  std::vector<pollfd> fds;
  f.server.add_pollfds(fds);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  EXPECT_TRUE(paused);
  EXPECT_EQ(f.server.connection_count(), 0u);
  EXPECT_TRUE(fds.empty()) << "the readable listener must not be polled while accept() cannot succeed";
  // Descriptors are back; after the retry interval it accepts again.
  f.pump(0.5);
  EXPECT_TRUE(f.server.accept_paused());
  f.pump(2.0);
  EXPECT_FALSE(f.server.accept_paused());
  a.send_all(kSmall);
  b.send_all(kSmall);
  ASSERT_TRUE(pump_until_answered(f, a, 1000, 2.0));
  ASSERT_TRUE(pump_until_answered(f, b, 1000, 2.0));
  EXPECT_EQ(a.response().status, 200);
  EXPECT_EQ(b.response().status, 200);
}

TEST(ApiServer, MalformedRequestIsAnsweredWithoutTheHandler) {
  Fixture f;
  Client c(f.server.path());
  c.send_all("GARBAGE\r\n\r\n");
  ASSERT_TRUE(pump_until_answered(f, c));
  EXPECT_EQ(c.response().status, 400);
  EXPECT_EQ(f.calls, 0);
}

TEST(JsonDepth, RefusesDeepNestingOutsideStringsOnly) {
  EXPECT_FALSE(json_depth_error(R"({"a": [[1, {"b": []}]]})", 5));
  EXPECT_TRUE(json_depth_error(R"({"a": [[1, {"b": []}]]})", 4));
  // Brackets inside strings (with escaped quotes and backslashes) do not count.
  EXPECT_FALSE(json_depth_error(R"({"a": "[[[[[[\"[[[[", "b": "\\"})", 1));
  EXPECT_TRUE(json_depth_error(R"({"a": "\\", "b": [[]]})", 2));
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const auto e = json_depth_error(deep, kMaxJsonNesting);
  ASSERT_TRUE(e);
  EXPECT_NE(e->find(fmt::format("nested deeper than {} levels", kMaxJsonNesting)), std::string::npos) << *e;
  EXPECT_FALSE(json_depth_error(std::string(kMaxJsonNesting, '[') + std::string(kMaxJsonNesting, ']'), kMaxJsonNesting));
  // Stray closing brackets do not buy depth.
  EXPECT_TRUE(json_depth_error("]]]]" + std::string(3, '['), 2));
}

}  // namespace
}  // namespace colo::daemon
