#include "daemon/client/api_client.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/error.h"
#include "daemon/client/http_message.h"
#include "daemon/client/job_request.h"

namespace colo::daemon {

namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

constexpr const char* kDefaultSocket = "/run/colo/colo.sock";

}  // namespace

ApiClient::ApiClient(std::string socket_path) : path_(std::move(socket_path)) {
  // The packaged colod (packaging/colod.toml) listens on /run/colo/colo.sock.
  if (path_.empty() && ::access(kDefaultSocket, F_OK) == 0) path_ = kDefaultSocket;
  if (path_.empty())
    throw UserError(fmt::format("no colod socket: pass --socket PATH or set COLO_SOCKET (no {})", kDefaultSocket));
  if (path_.size() >= sizeof(sockaddr_un{}.sun_path))
    throw UserError(fmt::format("socket path '{}' is too long for a Unix socket", path_));
}

ApiReply ApiClient::request(const std::string& method, const std::string& target, const nlohmann::json* body) const {
  Fd s;
  s.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s.fd < 0) throw std::runtime_error(fmt::format("socket: {}", std::strerror(errno)));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  if (::connect(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    throw ColodUnreachable(fmt::format("cannot reach colod at {}: {}", path_, std::strerror(errno)));

  HttpRequest req;
  req.method = method;
  req.target = target;
  if (body) {
    req.body = body->dump();
    req.headers["Content-Type"] = "application/json";
  }
  const std::string out = serialize(req);
  size_t off = 0;
  while (off < out.size()) {
    const ssize_t n = ::send(s.fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ColodUnreachable(fmt::format("sending to colod at {}: {}", path_, std::strerror(errno)));
    }
    off += static_cast<size_t>(n);
  }
  std::string raw;
  char buf[65536];
  for (;;) {
    pollfd p{s.fd, POLLIN, 0};
    const int pr = ::poll(&p, 1, 60000);
    if (pr == 0) throw UserError(fmt::format("colod at {} did not answer within 60 s", path_));
    if (pr < 0) {
      if (errno == EINTR) continue;
      throw UserError(fmt::format("waiting for colod: {}", std::strerror(errno)));
    }
    const ssize_t n = ::recv(s.fd, buf, sizeof(buf), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ColodUnreachable(fmt::format("reading from colod at {}: {}", path_, std::strerror(errno)));
    }
    if (n == 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  if (raw.empty()) throw ColodUnreachable(fmt::format("colod at {} closed the connection without answering", path_));
  HttpResponse resp;
  try {
    resp = parse_response(raw);
  } catch (const std::exception& e) {
    throw UserError(e.what());
  }
  ApiReply r;
  r.status = resp.status;
  if (!resp.body.empty()) {
    if (auto deep = json_depth_error(resp.body, kMaxJsonNesting)) throw UserError("colod answered with " + *deep);
    r.body = nlohmann::json::parse(resp.body, nullptr, false);
    if (r.body.is_discarded()) throw UserError("colod answered with malformed JSON");
  }
  return r;
}

nlohmann::json ApiClient::call(const std::string& method, const std::string& target, const nlohmann::json* body) const {
  ApiReply r = request(method, target, body);
  if (r.status >= 200 && r.status < 300) return r.body;
  std::string msg = r.body.is_object() && r.body.contains("error") && r.body["error"].is_string()
                        ? r.body["error"].get<std::string>()
                        : fmt::format("HTTP {}", r.status);
  throw UserError(msg);
}

}  // namespace colo::daemon
