#include "daemon/api_server.h"
#include "daemon/http_reply.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace colo::daemon {

namespace {

HttpResponse error_response(int status, const std::string& msg, const ServerLimits& limits) {
  HttpResponse r = json_error(status, msg);
  r.headers = limits.own_reply_headers;
  return r;
}

}  // namespace

namespace {
ServerLimits with_http(HttpLimits http) {
  ServerLimits l;
  l.http = http;
  return l;
}
}  // namespace

ApiServer::ApiServer(const std::string& path, HttpLimits limits, Handler handler)
    : ApiServer(path, with_http(limits), std::move(handler)) {}

void ApiServer::normalise_limits() {
  limits_.max_connections = std::max(1, limits_.max_connections);
  limits_.max_connections_per_uid = std::max(1, limits_.max_connections_per_uid);
  limits_.accepts_per_turn = std::max(1, limits_.accepts_per_turn);
  limits_.requests_per_turn = std::max(1, limits_.requests_per_turn);
  limits_.io_bytes_per_turn = std::max<std::size_t>(1, limits_.io_bytes_per_turn);
}

ApiServer::ApiServer(const ListenAddress& a, ServerLimits limits, Handler handler)
    : tcp_(true), limits_(limits), handler_(std::move(handler)) {
  normalise_limits();
  listen_fd_ = ::socket(a.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) throw std::runtime_error(fmt::format("socket: {}", std::strerror(errno)));
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (a.family == AF_INET6) ::setsockopt(listen_fd_, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&a.addr), a.len) != 0 || ::listen(listen_fd_, 128) != 0) {
    const int e = errno;
    ::close(listen_fd_);
    listen_fd_ = -1;
    throw std::runtime_error(fmt::format("cannot listen on {}: {}", a.text(a.port), std::strerror(e)));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

std::string socket_path_problem(const std::string& path) {
  constexpr std::size_t kMax = sizeof(sockaddr_un::sun_path) - 1;
  if (path.empty()) return "empty path";
  if (path.size() > kMax) return fmt::format("{} bytes long; a Unix socket path holds at most {}", path.size(), kMax);
  return "";
}

ApiServer::ApiServer(const std::string& path, ServerLimits limits, Handler handler)
    : path_(path), limits_(limits), handler_(std::move(handler)) {
  normalise_limits();
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) throw std::runtime_error(fmt::format("socket path '{}' is too long", path));
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) throw std::runtime_error(fmt::format("socket: {}", std::strerror(errno)));
  ::unlink(path.c_str());
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int e = errno;
    ::close(listen_fd_);
    throw std::runtime_error(fmt::format("bind {}: {}", path, std::strerror(e)));
  }
  ::chmod(path.c_str(), 0666);
  if (::listen(listen_fd_, 128) != 0) {
    const int e = errno;
    ::close(listen_fd_);
    ::unlink(path.c_str());
    throw std::runtime_error(fmt::format("listen: {}", std::strerror(e)));
  }
}

ApiServer::~ApiServer() {
  for (auto& [fd, c] : conns_) ::close(fd);
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    if (!tcp_) ::unlink(path_.c_str());
  }
}

void ApiServer::set_max_connections(int n) { limits_.max_connections = std::max(1, n); }

void ApiServer::add_pollfds(std::vector<pollfd>& fds) const {
  if (!accept_paused_) fds.push_back({listen_fd_, POLLIN, 0});
  for (const auto& [fd, c] : conns_) fds.push_back({fd, static_cast<short>(c.phase == Phase::Reading ? POLLIN : POLLOUT), 0});
}

ApiServer::ConnMap::iterator ApiServer::close_conn(ConnMap::iterator it) {
  buffered_ -= it->second.out.size() - it->second.out_off;
  ::close(it->first);
  accept_paused_ = false;  // a descriptor is free again
  return conns_.erase(it);
}

void ApiServer::drop(ConnMap::iterator it, int status, const std::string& msg) {
  // Only where no response has started: a half-written response must not get a second one.
  if (it->second.phase != Phase::Writing) {
    const std::string out = serialize(error_response(status, msg, limits_));
    [[maybe_unused]] const ssize_t n = ::send(it->first, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  close_conn(it);
}

bool ApiServer::read_some(int fd, Conn& c, double now_mono) {
  char buf[16384];
  std::size_t budget = limits_.io_bytes_per_turn;
  while (budget > 0 && c.phase == Phase::Reading) {
    const ssize_t n = ::recv(fd, buf, std::min(sizeof(buf), budget), 0);
    if (n > 0) {
      budget -= static_cast<std::size_t>(n);
      c.parser.feed(std::string_view(buf, static_cast<std::size_t>(n)));
      if (c.parser.failed()) {
        queue_response(fd, c, error_response(c.parser.error_status(), c.parser.error(), limits_), now_mono);
      } else if (c.parser.done()) {
        c.phase = Phase::Ready;
        ready_.emplace_back(fd, c.seq);
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    return true;  // the peer closed (or failed) before a complete request: nothing to answer
  }
  return false;
}

bool ApiServer::write_some(int fd, Conn& c) {
  std::size_t budget = limits_.io_bytes_per_turn;
  while (c.out_off < c.out.size() && budget > 0) {
    const std::size_t len = std::min(c.out.size() - c.out_off, budget);
    const ssize_t n = ::send(fd, c.out.data() + c.out_off, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c.out_off += static_cast<std::size_t>(n);
      buffered_ -= static_cast<std::size_t>(n);
      budget -= std::min(budget, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    return true;  // EPIPE, ECONNRESET: the client is gone
  }
  return c.out_off >= c.out.size();
}

void ApiServer::queue_response(int fd, Conn& c, const HttpResponse& r, double now_mono) {
  c.out = serialize(r);
  std::size_t body = r.body.size();
  if (c.out.size() > limits_.max_response_bytes) {
    const HttpResponse too_big = error_response(
        500, fmt::format("response of {} bytes exceeds colod's limit of {} bytes", c.out.size(), limits_.max_response_bytes),
        limits_);
    c.out = serialize(too_big);
    body = too_big.body.size();
  }
  // HEAD: the head of what GET would send, Content-Length included (RFC 9110 §9.3.2), no body.
  if (c.parser.done() && c.parser.request().method == "HEAD") c.out.resize(c.out.size() - body);
  c.out_off = 0;
  c.phase = Phase::Writing;
  c.deadline = now_mono + limits_.response_timeout_s;
  buffered_ += c.out.size();
  if (buffered_ > limits_.max_buffered_bytes) enforce_output_cap(fd);
}

void ApiServer::enforce_output_cap(int keep_fd) {
  while (buffered_ > limits_.max_buffered_bytes) {
    std::map<uid_t, std::size_t> by_uid;
    for (const auto& [fd, c] : conns_)
      if (c.phase == Phase::Writing) by_uid[c.peer.uid] += c.out.size() - c.out_off;
    // The heaviest uid's oldest writer, never the connection just queued; if that uid has no
    // other writer, the next heaviest.
    std::vector<std::pair<std::size_t, uid_t>> order;
    for (const auto& [uid, bytes] : by_uid) order.emplace_back(bytes, uid);
    std::sort(order.rbegin(), order.rend());
    auto victim = conns_.end();
    for (const auto& [bytes, uid] : order) {
      for (auto it = conns_.begin(); it != conns_.end(); ++it) {
        const Conn& c = it->second;
        if (it->first == keep_fd || c.phase != Phase::Writing || c.peer.uid != uid) continue;
        if (victim == conns_.end() || c.seq < victim->second.seq) victim = it;
      }
      if (victim != conns_.end()) break;
    }
    if (victim == conns_.end()) return;
    close_conn(victim);
  }
}

// Which connection goes first when room is needed: one still sending its request (it has cost
// nothing yet, and silent or trickling clients sit here), then one whose response is draining,
// and last one whose request waits for its handler turn; the oldest first within each. A client
// that just connected and sent its request is thus not pushed out by a flood of newer ones.
std::pair<int, std::uint64_t> ApiServer::eviction_key(const Conn& c) {
  const int rank = c.phase == Phase::Reading ? 0 : c.phase == Phase::Writing ? 1 : 2;
  return {rank, c.seq};
}

bool ApiServer::make_room(uid_t uid) {
  for (;;) {
    std::map<uid_t, int> count;
    for (const auto& [fd, c] : conns_) ++count[c.peer.uid];
    const bool uid_full = count[uid] >= limits_.max_connections_per_uid;
    const bool full = static_cast<int>(conns_.size()) >= limits_.max_connections;
    if (!uid_full && !full) return true;
    uid_t victim_uid = uid;
    if (!uid_full) {
      int most = -1;
      for (const auto& [u, n] : count) {
        if (n > most) {
          most = n;
          victim_uid = u;
        }
      }
    }
    auto victim = conns_.end();
    for (auto it = conns_.begin(); it != conns_.end(); ++it) {
      if (it->second.peer.uid != victim_uid || it->second.turn == turn_) continue;
      if (victim == conns_.end() || eviction_key(it->second) < eviction_key(victim->second)) victim = it;
    }
    if (victim == conns_.end()) return false;
    drop(victim, 503,
         fmt::format("colod closed this connection to admit a newer one ({} connections at most, {} per user)",
                     limits_.max_connections, limits_.max_connections_per_uid));
  }
}

void ApiServer::accept_some(double now_mono) {
  for (int i = 0; i < limits_.accepts_per_turn; ++i) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // The listener stays readable: polling it now would spin. Wait for a close or a while.
        accept_paused_ = true;
        accept_retry_at_ = now_mono + limits_.accept_retry_s;
      }
      return;  // EAGAIN, or an error the next turn retries
    }
    ucred cred{};
    if (tcp_) {
      cred.uid = kAnonymousUid;
      cred.gid = static_cast<gid_t>(-1);
    } else {
      socklen_t len = sizeof(cred);
      if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        ::close(fd);
        continue;
      }
    }
    if (!make_room(cred.uid)) {
      const std::string out = serialize(error_response(
          503, fmt::format("colod is at its connection limit ({} connections at most, {} per user); try again",
                           limits_.max_connections, limits_.max_connections_per_uid), limits_));
      [[maybe_unused]] const ssize_t n = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(fd);
      continue;
    }
    Conn c;
    c.turn = turn_;
    c.seq = next_seq_++;
    c.peer = Peer{cred.uid, cred.gid, cred.pid, tcp_};
    c.parser = RequestParser(limits_.http);
    c.deadline = now_mono + limits_.request_timeout_s;
    conns_.emplace(fd, std::move(c));
  }
}

void ApiServer::serve_ready(double now_mono) {
  const auto start = std::chrono::steady_clock::now();
  for (int calls = 0; calls < limits_.requests_per_turn; ++calls) {
    if (calls > 0 && limits_.handler_budget_s > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= limits_.handler_budget_s)
      break;
    // The oldest ready request of the uid served least recently; entries of closed or evicted
    // connections are dropped on the way.
    // (Prune first, then pick by position: erasing from a deque invalidates every iterator.)
    std::erase_if(ready_, [&](const std::pair<int, std::uint64_t>& q) {
      auto it = conns_.find(q.first);
      return it == conns_.end() || it->second.seq != q.second || it->second.phase != Phase::Ready;
    });
    if (ready_.empty()) return;
    size_t pick = 0;
    std::uint64_t pick_served = 0;
    for (size_t k = 0; k < ready_.size(); ++k) {
      const auto ls = last_served_.find(conns_.at(ready_[k].first).peer.uid);
      const std::uint64_t served = ls == last_served_.end() ? 0 : ls->second;
      if (k == 0 || served < pick_served) {
        pick = k;
        pick_served = served;
      }
    }
    const int fd = ready_[pick].first;
    ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(pick));
    auto it = conns_.find(fd);
    Conn& c = it->second;
    if (last_served_.size() > 4096) last_served_.clear();  // forget users long gone
    last_served_[c.peer.uid] = ++serve_counter_;
    ++handler_calls_;
    HttpResponse r;
    try {
      r = handler_(c.parser.request(), c.peer);
    } catch (const std::exception& e) {
      r = error_response(500, std::string("internal error: ") + e.what(), limits_);
    }
    queue_response(fd, c, r, now_mono);
    if (write_some(fd, c)) close_conn(it);  // small answers leave in the same turn
  }
}

void ApiServer::expire(double now_mono) {
  for (auto it = conns_.begin(); it != conns_.end();) {
    auto next = std::next(it);
    const Conn& c = it->second;
    if (c.phase == Phase::Reading && now_mono > c.deadline)
      drop(it, 408, fmt::format("request not completed within {:g} s", limits_.request_timeout_s));
    else if (c.phase == Phase::Writing && now_mono > c.deadline)
      close_conn(it);  // the client did not read its response in time
    it = next;
  }
  // A lowered cap (set_max_connections) applies to connections already open.
  while (static_cast<int>(conns_.size()) > limits_.max_connections) {
    auto victim = conns_.begin();
    for (auto it = conns_.begin(); it != conns_.end(); ++it)
      if (eviction_key(it->second) < eviction_key(victim->second)) victim = it;
    drop(victim, 503, "colod closed this connection: too many open connections");
  }
}

void ApiServer::handle(const std::vector<pollfd>& fds, double now_mono) {
  ++turn_;
  bool listener_ready = false;
  for (const pollfd& p : fds) {
    if (p.revents == 0) continue;
    if (p.fd == listen_fd_) {
      listener_ready = true;
      continue;
    }
    auto it = conns_.find(p.fd);
    if (it == conns_.end()) continue;
    Conn& c = it->second;
    if (c.phase == Phase::Reading && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
      if (read_some(p.fd, c, now_mono)) {
        close_conn(it);
        continue;
      }
      // A refused request (parser error) has its answer queued: try to send it right away.
      if (c.phase == Phase::Writing && write_some(p.fd, c)) close_conn(it);
    } else if (c.phase == Phase::Writing && (p.revents & (POLLOUT | POLLHUP | POLLERR))) {
      if (write_some(p.fd, c)) close_conn(it);
    }
  }
  serve_ready(now_mono);
  expire(now_mono);
  if (accept_paused_ && now_mono >= accept_retry_at_) accept_paused_ = false;
  // Accept last: a descriptor closed above may be reused at once, and `fds` still names it.
  if (listener_ready && !accept_paused_) accept_some(now_mono);
}

}  // namespace colo::daemon
