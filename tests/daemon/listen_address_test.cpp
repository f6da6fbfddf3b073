// The web listener's address: literal IPs and localhost only, clear one-line errors otherwise.
#include <gtest/gtest.h>

#include "core/error.h"
#include "daemon/listen_address.h"

namespace colo::daemon {
namespace {

TEST(ListenAddress, AcceptsIpv4Ipv6AndLocalhost) {
  auto a = ListenAddress::parse("127.0.0.1:9400", "--metrics-listen");
  EXPECT_EQ(a.family, AF_INET);
  EXPECT_EQ(a.port, 9400);
  EXPECT_TRUE(a.loopback());
  EXPECT_EQ(a.text(9400), "127.0.0.1:9400");
  auto b = ListenAddress::parse("[::1]:0", "x");
  EXPECT_EQ(b.family, AF_INET6);
  EXPECT_TRUE(b.loopback());
  EXPECT_EQ(b.text(4711), "[::1]:4711");
  EXPECT_TRUE(ListenAddress::parse("localhost:1", "x").loopback());
  EXPECT_FALSE(ListenAddress::parse("0.0.0.0:9400", "x").loopback());
}

TEST(ListenAddress, RefusesWhatItCannotBindWithoutGuessing) {
  for (const char* bad : {"9400", ":9400", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:94x",
                          "example.com:80", "::1:9400", "[::1:9400", "[::1]9400", "127.0.0.1:99999999999999999999"}) {
    try {
      ListenAddress::parse(bad, "web.listen");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UserError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind("web.listen: ", 0), 0u) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
}

}  // namespace
}  // namespace colo::daemon
