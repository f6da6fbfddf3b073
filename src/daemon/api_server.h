#pragma once
// colod's listener: a Unix stream socket, one HTTP request per connection, multiplexed with
// poll() inside the daemon's single-threaded loop. The caller's identity is the kernel's
// (SO_PEERCRED at accept time) — nothing in the request can claim another uid.
//
// Nothing a client does can stall the loop: every descriptor is non-blocking, each connection
// has its own read buffer (the parser) and write buffer, and handle() does a bounded amount of
// work per call (ServerLimits: accepts, handler calls, bytes per connection). A connection
// lives through Reading → Ready (request complete, waiting for its handler turn) → Writing
// (response queued, POLLOUT until drained) → closed, and is closed early when it misses its
// deadline (whole request within request_timeout_s, whole response read within
// response_timeout_s) or is evicted to make room (connection caps, buffered-output cap).
// The handler runs at most once per connection; users take turns at it.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

#include <poll.h>

#include "daemon/client/http_message.h"
#include "daemon/listen_address.h"

namespace colo::daemon {

// A TCP peer (the web listener) has no kernel-given identity: it is anonymous, with a uid no
// account has, so it is never an admin and owns no job.
inline constexpr uid_t kAnonymousUid = static_cast<uid_t>(-1);

struct Peer {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
  bool anonymous = false;
};

using Handler = std::function<HttpResponse(const HttpRequest&, const Peer&)>;

struct ServerLimits {
  HttpLimits http;                    // request head and body sizes
  double request_timeout_s = 10.0;    // the whole request must arrive within this of accept
  double response_timeout_s = 10.0;   // the client must read the whole response within this
  // A response larger than this is replaced by a 500 naming the sizes.
  std::size_t max_response_bytes = 16u << 20;
  // Unsent output of all connections together; beyond it the oldest writer of the uid holding
  // the most unsent bytes is closed.
  std::size_t max_buffered_bytes = 256u << 20;
  // When full, a new connection evicts a connection of the uid holding the most connections (a
  // user at its own cap evicts one of its own), so one user cannot lock others out: the oldest
  // one still sending its request, else the oldest draining its response (eviction_key).
  int max_connections = 256;
  int max_connections_per_uid = 64;
  // Work per handle() call; what is left waits for the next call (poll() reports it again).
  int accepts_per_turn = 32;
  int requests_per_turn = 16;                    // handler calls
  // Handler time per handle() (at least one call is made); 0 = only the count bounds it.
  double handler_budget_s = 0.05;
  std::size_t io_bytes_per_turn = 256u << 10;    // read or written per connection
  // After accept() fails with EMFILE/ENFILE the listener is not polled until a connection
  // closes or this much time passes, so a full descriptor table does not make the loop spin.
  double accept_retry_s = 1.0;
  // Headers on the replies the server writes itself (a malformed request, a timeout, an
  // oversized response): the web listener's security headers, which its handler adds to the rest.
  std::map<std::string, std::string> own_reply_headers;
};

// Why `path` cannot be a Unix socket (empty, longer than sun_path holds), or "" when it can.
std::string socket_path_problem(const std::string& path);

class ApiServer {
 public:
  // Binds `path` (removing a stale socket file), mode 0666: access control is per request.
  ApiServer(const std::string& path, HttpLimits limits, Handler handler);
  ApiServer(const std::string& path, ServerLimits limits, Handler handler);
  // Listens on TCP (the web listener: /metrics and the dashboard); every peer is anonymous.
  ApiServer(const ListenAddress& addr, ServerLimits limits, Handler handler);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Descriptors to poll (listener + connections), each with the events its state waits for.
  // A connection whose request waits for a handler turn asks for POLLOUT, so poll() returns
  // at once while work is pending.
  void add_pollfds(std::vector<pollfd>& fds) const;
  // Handles whatever poll() reported for our descriptors, serves queued requests, and closes
  // connections past their deadlines at `now_mono` (seconds, any monotonic origin).
  void handle(const std::vector<pollfd>& fds, double now_mono);
  const std::string& path() const { return path_; }  // empty for TCP
  int port() const { return port_; }                 // the bound TCP port (0 for a Unix socket)

  // Caps concurrent connections (at least 1); the daemon lowers it to keep descriptors for
  // its own work. Connections over a lowered cap are evicted at the next handle().
  void set_max_connections(int n);
  const ServerLimits& limits() const { return limits_; }

  // Introspection (tests, logs).
  std::size_t connection_count() const { return conns_.size(); }
  std::size_t buffered_bytes() const { return buffered_; }
  bool accept_paused() const { return accept_paused_; }
  std::uint64_t handler_calls() const { return handler_calls_; }

 private:
  enum class Phase { Reading, Ready, Writing };
  struct Conn {
    std::uint64_t seq = 0;  // accept order: smaller is older
    std::uint64_t turn = 0; // the handle() call that accepted it
    Peer peer;
    RequestParser parser;
    Phase phase = Phase::Reading;
    double deadline = 0;
    std::string out;
    std::size_t out_off = 0;
  };
  using ConnMap = std::map<int, Conn>;

  // Reads up to the per-turn budget; true when the peer closed before a complete request.
  bool read_some(int fd, Conn& c, double now_mono);
  // Writes up to the per-turn budget; true when the response is complete (or the peer gone).
  bool write_some(int fd, Conn& c);
  void queue_response(int fd, Conn& c, const HttpResponse& r, double now_mono);
  void serve_ready(double now_mono);
  void expire(double now_mono);
  void accept_some(double now_mono);
  static std::pair<int, std::uint64_t> eviction_key(const Conn& c);
  // Evicts for a new connection of `uid`; false when only connections accepted in this very
  // turn could go (each gets one turn to send its request): the newcomer is refused instead.
  bool make_room(uid_t uid);
  void enforce_output_cap(int keep_fd);
  // Best-effort one-shot error on a connection that is being dropped, then close.
  void drop(ConnMap::iterator it, int status, const std::string& msg);
  ConnMap::iterator close_conn(ConnMap::iterator it);

  void normalise_limits();

  std::string path_;
  bool tcp_ = false;
  int port_ = 0;
  int listen_fd_ = -1;
  ServerLimits limits_;
  Handler handler_;
  ConnMap conns_;
  std::deque<std::pair<int, std::uint64_t>> ready_;  // (fd, seq) in order of completion
  // Users take turns at the handler: the ready request of the uid served least recently goes
  // first, so one user's flood of (legitimate, expensive) requests does not queue others.
  std::map<uid_t, std::uint64_t> last_served_;
  std::uint64_t serve_counter_ = 0;
  std::uint64_t next_seq_ = 1;
  std::uint64_t turn_ = 0;  // handle() calls
  std::size_t buffered_ = 0;
  bool accept_paused_ = false;
  double accept_retry_at_ = 0;
  std::uint64_t handler_calls_ = 0;
};

}  // namespace colo::daemon
