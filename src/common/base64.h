#pragma once
// Base64 (RFC 4648, standard alphabet, padded): how colod's log endpoint hands out a job's output
// byte for byte (JSON strings carry only UTF-8 text).
#include <optional>
#include <string>
#include <string_view>

namespace colo {

std::string base64_encode(std::string_view bytes);
// nullopt for text that is not padded base64.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace colo
