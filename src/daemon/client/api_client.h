#pragma once
// The CLI's side of colod's API: one HTTP request per connection over the Unix socket.
// Errors reaching colod (no socket, daemon down) and errors colod answers (4xx/5xx with
// {"error": "…"}) both surface as colo::UserError with the daemon's one-line message.
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace colo::daemon {

// No colod answered: nothing listens on the socket, or the connection broke before an answer
// (colod stopped or restarting). A caller that only reads may try again.
class ColodUnreachable : public UserError {
 public:
  using UserError::UserError;
};

struct ApiReply {
  int status = 0;
  nlohmann::json body;
};

class ApiClient {
 public:
  // socket_path empty → UserError telling the user to pass --socket or set COLO_SOCKET.
  explicit ApiClient(std::string socket_path);

  // Sends the request and returns the decoded reply, whatever its status.
  ApiReply request(const std::string& method, const std::string& target,
                   const nlohmann::json* body = nullptr) const;
  // Like request(), but a non-2xx answer throws UserError with the daemon's message.
  nlohmann::json call(const std::string& method, const std::string& target,
                      const nlohmann::json* body = nullptr) const;

  const std::string& socket_path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace colo::daemon
