#include "daemon/api_server.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace colo::daemon {

namespace {
constexpr double kRequestTimeout = 10.0;  // a client must send its whole request within this

HttpResponse error_response(int status, const std::string& msg) {
  return HttpResponse{status, "application/json", nlohmann::json{{"error", msg}}.dump()};
}
}  // namespace

ApiServer::ApiServer(const std::string& path, HttpLimits limits, Handler handler)
    : path_(path), limits_(limits), handler_(std::move(handler)) {
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
  if (::listen(listen_fd_, 128) != 0) throw std::runtime_error(fmt::format("listen: {}", std::strerror(errno)));
}

ApiServer::~ApiServer() {
  for (auto& [fd, c] : conns_) ::close(fd);
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    ::unlink(path_.c_str());
  }
}

void ApiServer::add_pollfds(std::vector<pollfd>& fds) const {
  fds.push_back({listen_fd_, POLLIN, 0});
  for (const auto& [fd, c] : conns_) fds.push_back({fd, POLLIN, 0});
}

void ApiServer::accept_all(double now_mono) {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;  // EAGAIN or a transient error: try again at the next poll
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      ::close(fd);
      continue;
    }
    Conn c{Peer{cred.uid, cred.gid, cred.pid}, RequestParser(limits_), now_mono + kRequestTimeout};
    conns_.emplace(fd, std::move(c));
  }
}

void ApiServer::respond(int fd, const HttpResponse& r) {
  const std::string out = serialize(r);
  size_t off = 0;
  int stalls = 0;
  while (off < out.size()) {
    const ssize_t n = ::send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN && ++stalls < 500) {  // a slow reader gets ~5 s, not forever
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 10);
      continue;
    }
    break;
  }
}

void ApiServer::handle(const std::vector<pollfd>& fds, double now_mono) {
  for (const pollfd& p : fds) {
    if (p.revents == 0) continue;
    if (p.fd == listen_fd_) {
      accept_all(now_mono);
      continue;
    }
    auto it = conns_.find(p.fd);
    if (it == conns_.end()) continue;
    Conn& c = it->second;
    bool close_it = false;
    char buf[16384];
    for (;;) {
      const ssize_t n = ::recv(p.fd, buf, sizeof(buf), 0);
      if (n > 0) {
        c.parser.feed(std::string_view(buf, static_cast<size_t>(n)));
        if (c.parser.failed()) break;
        continue;
      }
      if (n == 0) {
        close_it = true;  // peer closed before a complete request
      }
      break;  // EAGAIN or error
    }
    if (c.parser.failed()) {
      respond(p.fd, error_response(c.parser.error_status(), c.parser.error()));
      close_it = true;
    } else if (c.parser.done()) {
      HttpResponse r;
      try {
        r = handler_(c.parser.request(), c.peer);
      } catch (const std::exception& e) {
        r = error_response(500, std::string("internal error: ") + e.what());
      }
      respond(p.fd, r);
      close_it = true;
    }
    if (close_it) {
      ::close(p.fd);
      conns_.erase(it);
    }
  }
  for (auto it = conns_.begin(); it != conns_.end();) {
    if (now_mono > it->second.deadline) {
      respond(it->first, error_response(400, "request not completed within 10 s"));
      ::close(it->first);
      it = conns_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace colo::daemon
