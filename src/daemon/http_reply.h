#pragma once
// JSON replies shared by the API (Unix socket) and the web listener (TCP).
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "core/one_line.h"
#include "daemon/client/http_message.h"

namespace colo::daemon {

// Invalid UTF-8 in user data (a job name) is replaced, never a throw.
inline HttpResponse json_reply(int status, const nlohmann::json& body) {
  return HttpResponse{status, "application/json",
                      body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), {}};
}
// Errors are one line whatever request text they quote (one_line is idempotent: no double escapes).
inline HttpResponse json_error(int status, const std::string& msg) {
  return json_reply(status, nlohmann::json{{"error", one_line(msg)}});
}

// The web listener's security headers (nosniff, CSP, no-referrer, no-store), which every answer
// of that listener carries, the server's own error replies included (web_routes.cpp).
std::map<std::string, std::string> web_security_headers();

}  // namespace colo::daemon
