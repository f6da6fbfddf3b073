#pragma once
// Finding a model summary file by the name a catalog, trace or .rad file gives it. The CARMA
// files name some summaries with other letter case than the files on disk have
// (efficientNet_32.model vs efficientnet_32.model), so an exact match is tried first, then a
// case-insensitive one.
#include <filesystem>
#include <optional>
#include <string>

namespace colo::estimate {

std::optional<std::filesystem::path> find_summary_file(const std::filesystem::path& dir, const std::string& name);

}  // namespace colo::estimate
