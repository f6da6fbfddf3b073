#pragma once
// The small, strict subset of HTTP/1.1 that colod speaks on its Unix socket: one request per
// connection, a request line, headers, and a body delimited by Content-Length (no chunked
// encoding, no keep-alive, no pipelining). Anything else is refused with a one-line reason.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace colo::daemon {

struct HttpRequest {
  std::string method;  // "GET", "POST"
  std::string target;  // "/v1/jobs/3?x=1" as sent
  std::string path;    // "/v1/jobs/3"
  std::map<std::string, std::string> query;  // decoded "x" -> "1"
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::map<std::string, std::string> headers;  // extra response headers (the web listener's)
};

std::string_view reason_phrase(int status);
std::string serialize(const HttpResponse& r);
std::string serialize(const HttpRequest& r);  // client side; adds Host, Content-Length, Connection

struct HttpLimits {
  std::size_t max_head_bytes = 16 * 1024;   // request line + headers
  std::size_t max_body_bytes = 1024 * 1024;
};

// Incremental request parser: feed bytes as they arrive until done() or failed().
class RequestParser {
 public:
  explicit RequestParser(HttpLimits limits = {}) : limits_(limits) {}
  void feed(std::string_view bytes);
  bool done() const { return state_ == State::Done; }
  bool failed() const { return state_ == State::Failed; }
  // When failed(): the status to answer (400, 413, 431, 501, 505) and a one-line reason.
  int error_status() const { return error_status_; }
  const std::string& error() const { return error_; }
  const HttpRequest& request() const { return req_; }

 private:
  enum class State { Head, Body, Done, Failed };
  void parse_head(std::string_view head);
  void fail(int status, std::string msg);

  HttpLimits limits_;
  State state_ = State::Head;
  std::string buf_;
  std::size_t body_len_ = 0;
  HttpRequest req_;
  int error_status_ = 0;
  std::string error_;
};

// Parses a complete response (the client reads until the server closes). Throws
// std::runtime_error on a malformed response.
HttpResponse parse_response(std::string_view raw);

std::string url_encode(std::string_view s);

// nlohmann::json parses deep input iteratively, but dump(), copies and comparisons recurse once
// per level: 100 000 nested arrays in a 200 kB body overflow the stack. Bodies are checked with
// this before they are parsed (limit: kMaxJsonNesting, job_request.h): a one-line reason when
// `text` nests arrays/objects deeper than `max_depth` (brackets inside strings do not count),
// nullopt otherwise. Malformed JSON is left to the JSON parser.
std::optional<std::string> json_depth_error(std::string_view text, std::size_t max_depth);

}  // namespace colo::daemon
