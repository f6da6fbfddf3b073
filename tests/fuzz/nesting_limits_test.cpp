// Item 2 of issue 10: no parser recurses on attacker-controlled depth. Each input nests 100 000
// levels deep (or is one 100 000-character line) and must give a clear one-line colo::UserError,
// not a stack overflow. Run under ASan (scripts/test.sh), whose larger frames overflow sooner.
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "daemon/client/job_file.h"
#include "daemon/client/job_request.h"
#include "daemon/client/toml_nesting.h"
#include "estimate/graph/parsers.h"
#include "fuzz_common.h"

using ::testing::HasSubstr;

namespace {

constexpr int kDeep = 100000;

std::string repeat(const std::string& s, int n) {
  std::string out;
  out.reserve(s.size() * static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::string user_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const colo::UserError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    return m;
  }
  ADD_FAILURE() << "no colo::UserError";
  return {};
}

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string p = std::filesystem::temp_directory_path().string() + "/colo-nesting-" +
                        std::to_string(::getpid()) + "-" + name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

}  // namespace

TEST(NestingLimits, ModuleReprNestedSequentials) {
  const std::string text = repeat("Sequential(\n", kDeep) + repeat("), 0 params\n", kDeep);
  EXPECT_THAT(user_error([&] { colo::estimate::parse_module_repr(text, "deep.model", 512); }),
              HasSubstr("deep.model:65: modules nested deeper than 64 levels"));
}

TEST(NestingLimits, ModuleReprLongLineNeverReachesTheRegex) {
  // libstdc++'s std::regex recurses once per character: a 100 000-character line overflowed the stack.
  const std::string text = "Model(\n  (a): Linear(" + repeat("(", kDeep) + "), 10 params\n), 10 params\n";
  EXPECT_THAT(user_error([&] { colo::estimate::parse_module_repr(text, "long.model", 512); }),
              HasSubstr("long.model:2: line longer than 1024 characters"));
}

TEST(NestingLimits, KerasAndTorchsummaryDeepBrackets) {
  // Neither parser recurses; deep brackets in a shape are a one-line error.
  const std::string keras = "Layer (type)  Output Shape  Param #\n=========\n d (Dense)  (None, " +
                            repeat("(", kDeep) + ")  10\n=========\n";
  EXPECT_THAT(user_error([&] { colo::estimate::parse_keras(keras, "deep.txt"); }), HasSubstr("deep.txt:3:"));
  const std::string ts = "Layer (type)  Output Shape  Param #\n=========\n Linear-1  " + repeat("[", kDeep) +
                         repeat("]", kDeep) + "  10\n=========\n";
  EXPECT_THAT(user_error([&] { colo::estimate::parse_torchsummary(ts, "deep.model"); }), HasSubstr("deep.model:3:"));
}

TEST(NestingLimits, TomlArrays) {
  const std::string p = temp_file("arrays.toml", "command = [\"x\"]\nname = " + repeat("[", kDeep) + repeat("]", kDeep) + "\n");
  EXPECT_THAT(user_error([&] { colo::daemon::parse_job_file(p); }),
              HasSubstr(p + ":2: arrays/inline tables nested deeper than 64 levels"));
  std::filesystem::remove(p);
}

TEST(NestingLimits, TomlInlineTables) {
  const std::string p = temp_file("tables.toml", "command = \"x\"\n\nenv = " + repeat("{a = ", kDeep) + "1" + repeat("}", kDeep) + "\n");
  EXPECT_THAT(user_error([&] { colo::daemon::parse_job_file(p); }),
              HasSubstr(p + ":3: arrays/inline tables nested deeper than 64 levels"));
  std::filesystem::remove(p);
}

TEST(NestingLimits, TomlScanIgnoresBracketsInStringsAndComments) {
  const std::string deep = repeat("[", 100);
  const std::string text = "a = \"" + deep + "\"\nb = '" + deep + "'\n# " + deep + "\nc = \"\"\"\n" + deep +
                           "\\\n\"\"\"\nd = '''" + deep + "'''\ne = [[1], {x = [2]}]\n";
  EXPECT_NO_THROW(colo::daemon::check_toml_nesting(text, "ok.toml"));
  EXPECT_THAT(user_error([&] { colo::daemon::check_toml_nesting(text + "f = " + deep + "\n", "bad.toml"); }),
              HasSubstr("bad.toml:9: arrays/inline tables nested deeper than 64 levels"));
}

TEST(NestingLimits, JsonSubmitRequest) {
  const std::string body = "{\"argv\":[\"x\"],\"fingerprint_inputs\":" + repeat("{\"a\":", kDeep) + "1" +
                           repeat("}", kDeep) + "}";
  const nlohmann::json j = nlohmann::json::parse(body);  // the parser itself is iterative
  EXPECT_THAT(user_error([&] { colo::daemon::submit_request_from_json(j); }),
              HasSubstr("request body: JSON nested deeper than 64 levels"));
  const nlohmann::json arrays = nlohmann::json::parse("{\"argv\":[\"x\"],\"env\":" + repeat("[", kDeep) + repeat("]", kDeep) + "}");
  EXPECT_THAT(user_error([&] { colo::daemon::submit_request_from_json(arrays); }), HasSubstr("nested deeper than 64"));
  // A shallow request still passes.
  EXPECT_NO_THROW(colo::daemon::submit_request_from_json(nlohmann::json::parse(
      "{\"argv\":[\"x\"],\"fingerprint_inputs\":" + repeat("{\"a\":", 60) + "1" + repeat("}", 60) + "}")));
}

TEST(NestingLimits, JsonThroughTheDaemon) {
  // The whole API path: HTTP parser → Daemon::handle on fake GPUs; must answer 400, not crash.
  const std::string body = "{\"argv\":[\"x\"],\"fingerprint_inputs\":" + repeat("{\"a\":", kDeep) + "1" +
                           repeat("}", kDeep) + "}";
  const std::string req = "POST /v1/jobs HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  const auto fn = colo::fuzz::registry().at("api_request");
  EXPECT_EQ(fn(reinterpret_cast<const std::uint8_t*>(req.data()), req.size()), 0);
}
