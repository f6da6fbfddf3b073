// `colo submit --probe-script -- CMD`: which script (and arguments) the probe runs for a command.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "estimate/trace/script_command.h"

namespace colo::estimate {
namespace {

using ::testing::HasSubstr;
using V = std::vector<std::string>;

std::string error_of(const V& argv) {
  try {
    script_of_command(argv);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ScriptCommand, InterpreterOptionsAreSkippedAndTheScriptsArgumentsKept) {
  auto c = script_of_command({"python3", "train.py", "--lr", "0.1", "-m", "x"});
  EXPECT_EQ(c.script, "train.py");
  EXPECT_EQ(c.args, (V{"--lr", "0.1", "-m", "x"}));  // after the script, -m is the script's own
  c = script_of_command({"/usr/bin/python3.11", "-u", "-W", "ignore", "-X", "dev", "-B", "/abs/train.py"});
  EXPECT_EQ(c.script, "/abs/train.py");
  EXPECT_TRUE(c.args.empty());
  c = script_of_command({"/usr/bin/env", "OMP_NUM_THREADS=1", "python", "t.py", "a"});
  EXPECT_EQ(c.script, "t.py");
  EXPECT_EQ(c.args, V{"a"});
  c = script_of_command({"./train.py", "--epochs", "3"});
  EXPECT_EQ(c.script, "./train.py");
  EXPECT_EQ(c.args, (V{"--epochs", "3"}));
}

TEST(ScriptCommand, CommandsWithoutAScriptFileAreNamed) {
  EXPECT_THAT(error_of({"python3", "-m", "trainer"}), HasSubstr("`python -m …` runs no script file"));
  EXPECT_THAT(error_of({"python3", "-mtrainer"}), HasSubstr("`python -mtrainer` runs no script file"));
  EXPECT_THAT(error_of({"python3", "-c", "print(1)"}), HasSubstr("`python -c …` runs no script file"));
  EXPECT_THAT(error_of({"python3", "-u"}), HasSubstr("names no script"));
  EXPECT_THAT(error_of({"python3", "-"}), HasSubstr("stdin"));
  EXPECT_THAT(error_of({"/bin/sh", "-c", "python3 train.py"}), HasSubstr("runs '/bin/sh', not a Python training script"));
  EXPECT_THAT(error_of({"pythonista", "x.py"}), HasSubstr("not a Python training script"));
  EXPECT_THAT(error_of({"env", "A=1"}), HasSubstr("`env` runs no command"));
  EXPECT_THAT(error_of({}), HasSubstr("no command"));
}

}  // namespace
}  // namespace colo::estimate
