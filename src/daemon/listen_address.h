#pragma once
// A TCP address colod listens on for /metrics and the dashboard ("127.0.0.1:9400",
// "[::1]:9400", "localhost:9400", "0.0.0.0:9400"; port 0 = any free port). Only literal IP
// addresses and "localhost" are accepted: a name that needs DNS would make the bind depend on
// the resolver at boot.
#include <string>

#include <sys/socket.h>

namespace colo::daemon {

struct ListenAddress {
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = AF_INET;
  std::string host;  // as given, brackets removed
  int port = 0;

  // Throws colo::UserError naming `what` (the flag or config key) and the problem.
  static ListenAddress parse(const std::string& text, const std::string& what);
  bool loopback() const;
  // "127.0.0.1:9400" / "[::1]:9400" for `port` (the bound one may differ from the asked 0).
  std::string text(int port) const;
};

}  // namespace colo::daemon
