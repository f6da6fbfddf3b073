// common/base64.h: what colod's log endpoint uses to hand out a job's bytes exactly.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "common/base64.h"

namespace colo {
namespace {

TEST(Base64, Rfc4648VectorsAndRoundTrips) {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, coded] : vectors) {
    EXPECT_EQ(base64_encode(plain), coded);
    EXPECT_EQ(base64_decode(coded), std::string(plain));
  }
  std::mt19937 rng(7);
  for (int n = 0; n < 300; ++n) {
    std::string bytes(static_cast<size_t>(n), '\0');
    for (char& c : bytes) c = static_cast<char>(rng() & 255);
    EXPECT_EQ(base64_decode(base64_encode(bytes)), bytes) << n;
  }
}

TEST(Base64, MalformedTextIsRefused) {
  for (const char* bad : {"Zg=", "Zg===", "Z===", "Zm9v!A==", "Zg=a", "=Zg=", "Zm\n9v"})
    EXPECT_FALSE(base64_decode(bad).has_value()) << bad;
}

}  // namespace
}  // namespace colo
