// PYTORCH_CUDA_ALLOC_CONF as PyTorch 2.x parses it (c10/core/AllocatorConfig.cpp).
#include "estimate/allocator/allocator_settings.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/error.h"
#include "core/units.h"

namespace colo::estimate {
namespace {


std::string settings_error(const std::string& text) {
  try {
    parse_allocator_settings(text);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(AllocatorSettings, TheDefaultIsPyTorchsDefault) {
  const auto s = parse_allocator_settings("");
  EXPECT_TRUE(s.is_default());
  EXPECT_FALSE(s.expandable_segments);
  EXPECT_EQ(s.max_split_size, std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(s.describe(), "");
  // Options that touch only locks and pinned host memory change nothing on the GPU.
  EXPECT_TRUE(parse_allocator_settings("backend:native, release_lock_on_cudamalloc:True,pinned_use_cuda_host_register:False,"
                                       "pinned_num_register_threads:8")
                  .is_default());
}

TEST(AllocatorSettings, ReadsEveryOptionThatMovesMemory) {
  const auto s = parse_allocator_settings(
      "expandable_segments:True, max_split_size_mb:128,garbage_collection_threshold:0.6,max_non_split_rounding_mb:64,"
      "roundup_power2_divisions:[64:8,256:4,>:1],");
  EXPECT_TRUE(s.expandable_segments);
  EXPECT_EQ(s.max_split_size, 128 * kBytesPerMiB);
  EXPECT_EQ(s.max_non_split_rounding, 64 * kBytesPerMiB);
  EXPECT_DOUBLE_EQ(s.garbage_collection_threshold, 0.6);
  // [1, 64) MiB take the first value, 64 MiB's interval too; ">" fills above 256 MiB's.
  for (std::size_t i = 0; i <= 6; ++i) EXPECT_EQ(s.roundup_power2_divisions[i], 8u) << i;
  EXPECT_EQ(s.roundup_power2_divisions[7], 0u);
  EXPECT_EQ(s.roundup_power2_divisions[8], 4u);
  for (std::size_t i = 9; i < 16; ++i) EXPECT_EQ(s.roundup_power2_divisions[i], 1u) << i;
  // PyTorch's own case (test_cuda.py): 2048 MiB keeps 8, above it 2.
  const auto py = parse_allocator_settings("roundup_power2_divisions:[128:8,256:16,512:1,2048:8,>:2]");
  EXPECT_EQ(py.roundup_power2_divisions[11], 8u);
  EXPECT_EQ(py.roundup_power2_divisions[12], 2u);
  EXPECT_EQ(parse_allocator_settings("roundup_power2_divisions:[>:4]").roundup_power2_divisions[0], 0u);
  // Numbers as PyTorch reads them (stoi: the leading digits), whitespace of any kind skipped.
  EXPECT_EQ(parse_allocator_settings("max_split_size_mb:64MB").max_split_size, 64 * kBytesPerMiB);
  EXPECT_TRUE(parse_allocator_settings("max_split_size_mb:64,\texpandable_segments:True").expandable_segments);
  EXPECT_EQ(s.describe().substr(0, 46), "expandable_segments:True,max_split_size_mb:128");
  EXPECT_EQ(parse_allocator_settings("roundup_power2_divisions:2").roundup_power2_divisions[15], 2u);
  EXPECT_FALSE(parse_allocator_settings("expandable_segments:False").expandable_segments);
}

TEST(AllocatorSettings, RefusesWhatPyTorchRefusesAndWhatColoCannotModel) {
  EXPECT_EQ(settings_error("expandable_segment:True"),
            "PYTORCH_CUDA_ALLOC_CONF 'expandable_segment:True': unknown option 'expandable_segment'");
  EXPECT_EQ(settings_error("large_segment_size_mb:64"),
            "PYTORCH_CUDA_ALLOC_CONF 'large_segment_size_mb:64': large_segment_size_mb (a newer PyTorch's option) is not "
            "modelled");
  EXPECT_EQ(settings_error("expandable_segments:true"),
            "PYTORCH_CUDA_ALLOC_CONF 'expandable_segments:true': expandable_segments 'true': expected True or False");
  EXPECT_EQ(settings_error("max_split_size_mb:19"),
            "PYTORCH_CUDA_ALLOC_CONF 'max_split_size_mb:19': max_split_size_mb 19: too small, must be at least 20");
  EXPECT_EQ(settings_error("max_split_size_mb:12x"),
            "PYTORCH_CUDA_ALLOC_CONF 'max_split_size_mb:12x': max_split_size_mb 12: too small, must be at least 20");
  EXPECT_EQ(settings_error("max_split_size_mb:x12"),
            "PYTORCH_CUDA_ALLOC_CONF 'max_split_size_mb:x12': max_split_size_mb 'x12': expected a whole number");
  EXPECT_EQ(settings_error("max_split_size_mb:99999999999999999999"),
            "PYTORCH_CUDA_ALLOC_CONF 'max_split_size_mb:99999999999999999999': max_split_size_mb "
            "'99999999999999999999': expected a whole number that fits 64 bits");
  EXPECT_EQ(settings_error("max_split_size_mb"),
            "PYTORCH_CUDA_ALLOC_CONF 'max_split_size_mb': expected ':' after max_split_size_mb, found the end");
  EXPECT_EQ(settings_error("max_split_size_mb:"), "PYTORCH_CUDA_ALLOC_CONF 'max_split_size_mb:': max_split_size_mb: its value is missing");
  EXPECT_EQ(settings_error("garbage_collection_threshold:1.0"),
            "PYTORCH_CUDA_ALLOC_CONF 'garbage_collection_threshold:1.0': garbage_collection_threshold '1.0': expected a "
            "number between 0 and 1, exclusive");
  EXPECT_EQ(settings_error("roundup_power2_divisions:3"),
            "PYTORCH_CUDA_ALLOC_CONF 'roundup_power2_divisions:3': roundup_power2_divisions 3: divisions must be a power of 2");
  EXPECT_EQ(settings_error("roundup_power2_divisions:[100:2]"),
            "PYTORCH_CUDA_ALLOC_CONF 'roundup_power2_divisions:[100:2]': roundup_power2_divisions interval 100: intervals "
            "must be powers of 2 (MiB)");
  EXPECT_EQ(settings_error("roundup_power2_divisions:[64:2"),
            "PYTORCH_CUDA_ALLOC_CONF 'roundup_power2_divisions:[64:2': roundup_power2_divisions: the list has no closing ']'");
  EXPECT_EQ(settings_error("backend:cudaMallocAsync"),
            "PYTORCH_CUDA_ALLOC_CONF 'backend:cudaMallocAsync': backend:cudaMallocAsync hands memory to CUDA's own pool "
            "allocator, which colo does not model");
  EXPECT_EQ(settings_error("expandable_segments:True max_split_size_mb:64"),
            "PYTORCH_CUDA_ALLOC_CONF 'expandable_segments:True max_split_size_mb:64': expandable_segments "
            "'Truemax_split_size_mb': expected True or False");
  EXPECT_EQ(settings_error(",expandable_segments:True"),
            "PYTORCH_CUDA_ALLOC_CONF ',expandable_segments:True': ',' where an option's name was expected");
}

// Where the settings come from: current PyTorch reads PYTORCH_ALLOC_CONF first, the older
// PYTORCH_CUDA_ALLOC_CONF otherwise; empty counts as unset. Errors name the variable.
TEST(AllocatorSettings, TheNewerVariableIsReadFirstAndErrorsNameTheVariable) {
  std::map<std::string, std::string> env;
  auto lookup = [&env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_FALSE(allocator_conf_variable(lookup));
  env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True";
  EXPECT_EQ(allocator_conf_variable(lookup)->name, "PYTORCH_CUDA_ALLOC_CONF");
  env["PYTORCH_ALLOC_CONF"] = "";
  EXPECT_EQ(allocator_conf_variable(lookup)->name, "PYTORCH_CUDA_ALLOC_CONF");
  env["PYTORCH_ALLOC_CONF"] = "max_split_size_mb:64";
  const auto v = allocator_conf_variable(lookup);
  EXPECT_EQ(v->name, "PYTORCH_ALLOC_CONF");
  EXPECT_EQ(v->value, "max_split_size_mb:64");
  try {
    parse_allocator_settings("bogus:1", "PYTORCH_ALLOC_CONF");
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "PYTORCH_ALLOC_CONF 'bogus:1': unknown option 'bogus'");
  }
}

}  // namespace
}  // namespace colo::estimate
