#pragma once
// colod's listener: a Unix stream socket, one HTTP request per connection, multiplexed with
// poll() inside the daemon's single-threaded loop. The caller's identity is the kernel's
// (SO_PEERCRED at accept time) — nothing in the request can claim another uid.
#include <functional>
#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

#include <poll.h>

#include "daemon/client/http_message.h"

namespace colo::daemon {

struct Peer {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
};

using Handler = std::function<HttpResponse(const HttpRequest&, const Peer&)>;

class ApiServer {
 public:
  // Binds `path` (removing a stale socket file), mode 0666: access control is per request.
  ApiServer(const std::string& path, HttpLimits limits, Handler handler);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Descriptors to poll (listener + connections).
  void add_pollfds(std::vector<pollfd>& fds) const;
  // Handles whatever poll() reported for our descriptors; `now_mono` closes idle connections.
  void handle(const std::vector<pollfd>& fds, double now_mono);
  const std::string& path() const { return path_; }

 private:
  struct Conn {
    Peer peer;
    RequestParser parser;
    double deadline = 0;
  };
  void accept_all(double now_mono);
  void respond(int fd, const HttpResponse& r);

  std::string path_;
  int listen_fd_ = -1;
  HttpLimits limits_;
  Handler handler_;
  std::map<int, Conn> conns_;
};

}  // namespace colo::daemon
