#pragma once
// Input files (model summaries, data sets, job files) are read whole into memory. Their size is
// checked before reading, so a wrong or hostile file (a 100 MB "summary") is refused at once with
// the limit in the message instead of taking seconds and gigabytes. Limits: core/limits.h.
#include <cstdint>
#include <string>
#include <string_view>

namespace colo::estimate {

// Throws colo::UserError "PATH: cannot open WHAT" or "PATH: WHAT is N MiB, over the M MiB limit".
void check_input_size(const std::string& path, std::uintmax_t max_bytes, std::string_view what);
// check_input_size, then the whole file (binary, as is, less a leading UTF-8 byte-order mark).
std::string read_input_file(const std::string& path, std::uintmax_t max_bytes, std::string_view what);

}  // namespace colo::estimate
