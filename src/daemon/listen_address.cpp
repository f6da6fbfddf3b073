#include "daemon/listen_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"
#include "core/one_line.h"

namespace colo::daemon {

ListenAddress ListenAddress::parse(const std::string& text, const std::string& what) {
  auto bad = [&](const std::string& why) {
    return UserError(fmt::format("{}: '{}' {} (expected HOST:PORT, e.g. 127.0.0.1:9400 or [::1]:9400)", what,
                                 one_line(text), why));
  };
  ListenAddress a;
  std::string port_text;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos) throw bad("has no closing ']'");
    a.host = text.substr(1, close - 1);
    if (close + 1 >= text.size() || text[close + 1] != ':') throw bad("has no ':PORT' after the address");
    port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) throw bad("has no ':PORT'");
    a.host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (a.host.find(':') != std::string::npos) throw bad("is an IPv6 address without brackets");
  }
  if (a.host.empty()) throw bad("has no host (use 0.0.0.0 to listen on every address)");
  int port = -1;
  auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || p != port_text.data() + port_text.size() || port < 0 || port > 65535)
    throw bad("has a port that is not a number in 0..65535");
  a.port = port;
  std::memset(&a.addr, 0, sizeof(a.addr));
  const std::string host = a.host == "localhost" ? "127.0.0.1" : a.host;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a.addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.addr);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    a.family = AF_INET;
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    a.len = sizeof(sockaddr_in);
  } else if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    a.family = AF_INET6;
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    a.len = sizeof(sockaddr_in6);
  } else {
    throw bad("has a host that is not an IP address or 'localhost'");
  }
  return a;
}

bool ListenAddress::loopback() const {
  if (family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&addr);
    return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
  }
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&addr);
  return IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
}

std::string ListenAddress::text(int bound_port) const {
  const std::string h = host == "localhost" ? "127.0.0.1" : host;
  return family == AF_INET6 ? fmt::format("[{}]:{}", h, bound_port) : fmt::format("{}:{}", h, bound_port);
}

}  // namespace colo::daemon
