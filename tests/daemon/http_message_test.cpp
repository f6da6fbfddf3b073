#include "daemon/client/http_message.h"

#include <gtest/gtest.h>

namespace colo::daemon {
namespace {

TEST(HttpRequestParser, ParsesARequestFedByteByByte) {
  const std::string raw = "POST /v1/jobs/7/logs?stream=stderr&offset=10&x=a%20b HTTP/1.1\r\nHost: colod\r\n"
                          "Content-Length: 4\r\n\r\nbody";
  RequestParser p;
  for (char c : raw) p.feed(std::string_view(&c, 1));
  ASSERT_TRUE(p.done()) << p.error();
  const HttpRequest& r = p.request();
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.path, "/v1/jobs/7/logs");
  EXPECT_EQ(r.query.at("stream"), "stderr");
  EXPECT_EQ(r.query.at("offset"), "10");
  EXPECT_EQ(r.query.at("x"), "a b");
  EXPECT_EQ(r.headers.at("host"), "colod");
  EXPECT_EQ(r.body, "body");
}

TEST(HttpRequestParser, RefusesWhatItDoesNotSpeak) {
  struct Case {
    std::string raw;
    int status;
  };
  const std::vector<Case> cases = {
      {"GET /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
      {"GET /x HTTP/1.1\r\nContent-Length: 12abc\r\n\r\n", 400},
      {"GET /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", 400},
      {"GET /x HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n", 413},
      {"GET x HTTP/1.1\r\n\r\n", 400},
      {"GET /x%zz HTTP/1.1\r\n\r\n", 400},
      {"GET /x?=1 HTTP/1.1\r\n\r\n", 400},  // a parameter with no name is not one the route reads
      {"GET /x HTTP/3\r\n\r\n", 505},
      {"GET /x HTTP/1.1\r\nno colon here\r\n\r\n", 400},
      {"GET /x HTTP/1.1\r\n\r\nextra", 400},
      {"GET /x HTTP/1.1\r\nContent-Length: 1\r\n\r\nxy", 400},
      {std::string(20000, 'G'), 431},
      // RFC 9110 §5.5: no bare LF, lone CR, NUL or other control character inside a field value.
      {"GET /x HTTP/1.1\r\nX-A: a\nInjected: b\r\n\r\n", 400},
      {"GET /x HTTP/1.1\r\nX-A: a\rb\r\n\r\n", 400},
      {std::string("GET /x HTTP/1.1\r\nX-A: a\0b\r\n\r\n", 29), 400},
      {"GET /x HTTP/1.1\r\nX-A: a\x01" "b\r\n\r\n", 400},
      // Lines ended by a bare LF are refused at once, not after the request deadline (the head
      // would never end with CRLF CRLF).
      {"GET /v1/status HTTP/1.1\n\n", 400},
      {"GET /v1/status HTTP/1.1\n", 400},
  };
  for (const Case& c : cases) {
    RequestParser p;
    p.feed(c.raw);
    EXPECT_TRUE(p.failed()) << c.raw.substr(0, 60);
    EXPECT_EQ(p.error_status(), c.status) << c.raw.substr(0, 60) << ": " << p.error();
    EXPECT_FALSE(p.error().empty());
  }
}

TEST(HttpResponse, RoundTrips) {
  HttpResponse r{404, "application/json", R"({"error":"job 3 not found"})", {}};
  const HttpResponse back = parse_response(serialize(r));
  EXPECT_EQ(back.status, 404);
  EXPECT_EQ(back.body, r.body);
  EXPECT_THROW(parse_response("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"), std::runtime_error);
  EXPECT_THROW(parse_response("nonsense"), std::runtime_error);
}

}  // namespace
}  // namespace colo::daemon
