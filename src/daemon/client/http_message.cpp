#include "daemon/client/http_message.h"

#include "core/one_line.h"
#include "common/ascii_lower.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>

#include <fmt/format.h>

namespace colo::daemon {

namespace {

// Request text quoted in an error message (a bare '\n' in a header line must not turn the one-line
// reason into two: found by fuzz/api_request_fuzz.cpp).
std::string printable(std::string_view s) { return one_line(s); }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decoding; nullopt on a broken escape.
std::optional<std::string> url_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      const int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (s[i] == '+') {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

}  // namespace

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    case 507: return "Insufficient Storage";
    default: return "Unknown";
  }
}

std::string serialize(const HttpResponse& r) {
  std::string extra;
  for (const auto& [k, v] : r.headers) extra += fmt::format("{}: {}\r\n", k, v);
  return fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n{}",
                     r.status, reason_phrase(r.status), r.content_type, r.body.size(), extra, r.body);
}

std::string serialize(const HttpRequest& r) {
  std::string out = fmt::format("{} {} HTTP/1.1\r\nHost: colod\r\nConnection: close\r\n", r.method, r.target);
  for (const auto& [k, v] : r.headers) out += fmt::format("{}: {}\r\n", k, v);
  out += fmt::format("Content-Length: {}\r\n\r\n", r.body.size());
  out += r.body;
  return out;
}

std::string url_encode(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '~')
      out.push_back(c);
    else
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
  }
  return out;
}

std::optional<std::string> json_depth_error(std::string_view text, std::size_t max_depth) {
  std::size_t depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        return fmt::format("JSON nested deeper than {} levels (at byte {})", max_depth, i);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

void RequestParser::fail(int status, std::string msg) {
  state_ = State::Failed;
  error_status_ = status;
  error_ = std::move(msg);
  buf_.clear();
}

void RequestParser::feed(std::string_view bytes) {
  if (state_ == State::Done || state_ == State::Failed) {
    if (state_ == State::Done && !bytes.empty()) fail(400, "data after the request body (one request per connection)");
    return;
  }
  buf_.append(bytes);
  if (state_ == State::Head) {
    const size_t end = buf_.find("\r\n\r\n");
    // A line ended by a bare LF: the head would never end as HTTP requires, so answer now rather
    // than after the request deadline.
    const size_t head_len = end == std::string::npos ? buf_.size() : end;
    for (size_t i = buf_.find('\n'); i != std::string::npos && i < head_len; i = buf_.find('\n', i + 1))
      if (i == 0 || buf_[i - 1] != '\r') return fail(400, "request head lines must end with CRLF, not a bare LF");
    if (end == std::string::npos) {
      if (buf_.size() > limits_.max_head_bytes)
        fail(431, fmt::format("request head exceeds {} bytes", limits_.max_head_bytes));
      return;
    }
    if (end + 4 > limits_.max_head_bytes) {
      fail(431, fmt::format("request head exceeds {} bytes", limits_.max_head_bytes));
      return;
    }
    parse_head(std::string_view(buf_).substr(0, end));
    if (state_ == State::Failed) return;
    buf_.erase(0, end + 4);
    state_ = State::Body;
  }
  if (state_ == State::Body) {
    if (buf_.size() > body_len_) {
      fail(400, "body longer than Content-Length (one request per connection)");
      return;
    }
    if (buf_.size() == body_len_) {
      req_.body = std::move(buf_);
      buf_.clear();
      state_ = State::Done;
    }
  }
}

void RequestParser::parse_head(std::string_view head) {
  size_t pos = head.find("\r\n");
  const std::string_view line = head.substr(0, pos);
  std::string_view rest = pos == std::string_view::npos ? std::string_view() : head.substr(pos + 2);

  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return fail(400, "malformed request line (want 'METHOD /path HTTP/1.1')");
  req_.method = std::string(line.substr(0, sp1));
  req_.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(req_.method)) return fail(400, "malformed request method");
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return fail(505, fmt::format("unsupported HTTP version '{}'", printable(version.substr(0, 30))));
  if (req_.target.empty() || req_.target[0] != '/') return fail(400, "request target must be an absolute path");
  for (char c : req_.target)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return fail(400, "control character in request target");

  const size_t q = req_.target.find('?');
  auto p = url_decode(std::string_view(req_.target).substr(0, q));
  if (!p) return fail(400, "bad percent-escape in request path");
  req_.path = *p;
  if (q != std::string::npos) {
    std::string_view qs = std::string_view(req_.target).substr(q + 1);
    while (!qs.empty()) {
      const size_t amp = qs.find('&');
      const std::string_view kv = qs.substr(0, amp);
      const size_t eq = kv.find('=');
      auto k = url_decode(kv.substr(0, eq));
      auto v = url_decode(eq == std::string_view::npos ? std::string_view() : kv.substr(eq + 1));
      if (!k || !v) return fail(400, "bad percent-escape in query string");
      if (k->empty() && !kv.empty()) return fail(400, "query parameter with an empty name");
      if (!k->empty() && !req_.query.emplace(*k, *v).second)
        return fail(400, fmt::format("query parameter '{}' given twice", printable(k->substr(0, 30))));
      if (amp == std::string_view::npos) break;
      qs.remove_prefix(amp + 1);
    }
  }

  int count = 0;
  while (!rest.empty()) {
    pos = rest.find("\r\n");
    const std::string_view h = rest.substr(0, pos);
    rest = pos == std::string_view::npos ? std::string_view() : rest.substr(pos + 2);
    if (++count > 64) return fail(431, "more than 64 header fields");
    const size_t colon = h.find(':');
    if (colon == std::string_view::npos || !is_token(h.substr(0, colon)))
      return fail(400, fmt::format("malformed header line '{}'", printable(h.substr(0, 60))));
    const std::string name = ascii_lower(h.substr(0, colon));
    // RFC 9110 §5.5: a field value holds no CR, LF or NUL (nor other controls but HTAB); a bare LF
    // would end the line for one reader and not for another.
    for (const char c : h.substr(colon + 1)) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7f)
        return fail(400, fmt::format("control character 0x{:02x} in the value of header '{}'", u, printable(name)));
    }
    if (req_.headers.count(name) && (name == "content-length" || name == "transfer-encoding"))
      return fail(400, fmt::format("duplicate {} header", name));
    req_.headers[name] = std::string(trim(h.substr(colon + 1)));
  }
  if (req_.headers.count("transfer-encoding"))
    return fail(501, "Transfer-Encoding is not supported; send Content-Length");
  if (auto it = req_.headers.find("content-length"); it != req_.headers.end()) {
    const std::string& v = it->second;
    unsigned long long n = 0;
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec != std::errc() || ptr != v.data() + v.size())
      return fail(400, fmt::format("invalid Content-Length '{}'", printable(std::string_view(v).substr(0, 30))));
    if (n > limits_.max_body_bytes)
      return fail(413, fmt::format("request body of {} bytes exceeds the limit of {} bytes", n, limits_.max_body_bytes));
    body_len_ = static_cast<size_t>(n);
  } else {
    body_len_ = 0;
  }
}

HttpResponse parse_response(std::string_view raw) {
  const size_t end = raw.find("\r\n\r\n");
  if (end == std::string_view::npos) throw std::runtime_error("malformed response from colod (no header end)");
  const std::string_view head = raw.substr(0, end);
  const size_t eol = head.find("\r\n");
  const std::string_view status_line = head.substr(0, eol);
  if (status_line.substr(0, 9) != "HTTP/1.1 " || status_line.size() < 12)
    throw std::runtime_error("malformed response status line from colod");
  HttpResponse r;
  auto [ptr, ec] = std::from_chars(status_line.data() + 9, status_line.data() + 12, r.status);
  if (ec != std::errc()) throw std::runtime_error("malformed response status from colod");
  size_t len = 0;
  bool have_len = false;
  std::string_view rest = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2);
  while (!rest.empty()) {
    const size_t p = rest.find("\r\n");
    const std::string_view h = rest.substr(0, p);
    rest = p == std::string_view::npos ? std::string_view() : rest.substr(p + 2);
    const size_t colon = h.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string name = ascii_lower(h.substr(0, colon));
    const std::string_view v = trim(h.substr(colon + 1));
    if (name == "content-length") {
      std::from_chars(v.data(), v.data() + v.size(), len);
      have_len = true;
    } else if (name == "content-type") {
      r.content_type = std::string(v);
    }
  }
  r.body = std::string(raw.substr(end + 4));
  if (have_len && r.body.size() != len) throw std::runtime_error("truncated response from colod");
  return r;
}

}  // namespace colo::daemon
