#pragma once
// JSON replies shared by the API (Unix socket) and the web listener (TCP).
#include <string>

#include <nlohmann/json.hpp>

#include "daemon/client/http_message.h"

namespace colo::daemon {

// Invalid UTF-8 in user data (a job name) is replaced, never a throw.
inline HttpResponse json_reply(int status, const nlohmann::json& body) {
  return HttpResponse{status, "application/json",
                      body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), {}};
}
inline HttpResponse json_error(int status, const std::string& msg) {
  return json_reply(status, nlohmann::json{{"error", msg}});
}

}  // namespace colo::daemon
