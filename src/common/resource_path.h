#pragma once
// Where colo's read-only resources live (data sets, trained models, calibration profiles, the
// probe's Python package, dashboard assets): first the directory an environment variable names,
// then <prefix>/share/colo beside the running binary (an installed or unpacked .deb), then the
// source tree colo was built from (a clone runs without installing), then the configured install
// share directory. One rule for every resource, so a clone and a package find the same files.
#include <string>
#include <string_view>

namespace colo {

// The first of $env_var/rel, <exe>/../share/colo/<tree_rel>/rel, <source>/<tree_rel>/rel,
// <share>/<tree_rel>/rel that exists; when none does,
// the source-tree path (so an error message names the place a clone would have it).
// `env_var` may be null. `rel` is relative to the directory the variable names.
std::string resource_path(const char* env_var, std::string_view tree_rel, std::string_view rel);

// The small data sets in the repository's data/ ($COLO_DATA overrides): e.g.
// data_path("carma/workloads.csv").
std::string data_path(std::string_view rel);

// The directories searched, for messages ("looked in ...").
std::string resource_search_text(const char* env_var, std::string_view tree_rel);

}  // namespace colo
