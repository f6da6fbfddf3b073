// `colo submit --probe-script -- CMD`: which script (and arguments) the probe runs for a command.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "estimate/trace/script_command.h"

namespace colo::estimate {
namespace {

using ::testing::HasSubstr;
using V = std::vector<std::string>;

std::string command_error(const V& argv) {
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

TEST(ScriptCommand, TheInterpreterIsTheOneTheCommandNames) {
  EXPECT_EQ(script_of_command({"python3", "train.py"}).interpreter, "python3");
  EXPECT_EQ(script_of_command({"/opt/venv/bin/python3.11", "-u", "t.py"}).interpreter, "/opt/venv/bin/python3.11");
  EXPECT_EQ(script_of_command({"env", "A=1", "venv/bin/python", "t.py"}).interpreter, "venv/bin/python");
  EXPECT_EQ(script_of_command({"python3", "-m", "torch.distributed.run", "t.py"}).interpreter, "python3");
  // torchrun's processes: the job's python3; a script run directly names none (colo's own probes it)
  EXPECT_EQ(script_of_command({"torchrun", "t.py"}).interpreter, "python3");
  EXPECT_EQ(script_of_command({"/opt/venv/bin/torchrun", "t.py"}).interpreter, "python3");
  EXPECT_EQ(script_of_command({"./train.py"}).interpreter, "");
  EXPECT_TRUE(is_python_interpreter("/usr/bin/python3.12"));
  EXPECT_FALSE(is_python_interpreter("/usr/bin/python3-config"));
  EXPECT_FALSE(is_python_interpreter("ipython"));
}

TEST(ScriptCommand, CommandsWithoutAScriptFileAreNamed) {
  EXPECT_THAT(command_error({"python3", "-m", "trainer"}), HasSubstr("`python -m …` runs no script file"));
  EXPECT_THAT(command_error({"python3", "-mtrainer"}), HasSubstr("`python -mtrainer` runs no script file"));
  EXPECT_THAT(command_error({"python3", "-c", "print(1)"}), HasSubstr("`python -c …` runs no script file"));
  EXPECT_THAT(command_error({"python3", "-u"}), HasSubstr("names no script"));
  EXPECT_THAT(command_error({"python3", "-"}), HasSubstr("stdin"));
  EXPECT_THAT(command_error({"/bin/sh", "-c", "python3 train.py"}), HasSubstr("runs '/bin/sh', not a Python training script"));
  EXPECT_THAT(command_error({"pythonista", "x.py"}), HasSubstr("not a Python training script"));
  EXPECT_THAT(command_error({"env", "A=1"}), HasSubstr("`env` runs no command"));
  EXPECT_THAT(command_error({}), HasSubstr("no command"));
}

TEST(ScriptCommand, TorchrunsOptionsComeBeforeTheScriptAndNameItsProcesses) {
  auto c = script_of_command({"torchrun", "--standalone", "--nproc-per-node", "4", "train.py", "--batch", "8"});
  EXPECT_EQ(c.script, "train.py");
  EXPECT_EQ(c.args, (V{"--batch", "8"}));
  EXPECT_EQ(c.torchrun, 4);
  c = script_of_command({"/opt/venv/bin/torchrun", "--nproc_per_node=2", "--nnodes=1", "--master-port", "29501",
                         "--rdzv_backend=c10d", "t.py"});
  EXPECT_EQ(c.script, "t.py");
  EXPECT_TRUE(c.args.empty());
  EXPECT_EQ(c.torchrun, 2);
  c = script_of_command({"python3", "-u", "-m", "torch.distributed.run", "--nproc-per-node", "gpu", "a/t.py", "x"});
  EXPECT_EQ(c.script, "a/t.py");
  EXPECT_EQ(c.args, V{"x"});
  EXPECT_EQ(c.torchrun, ScriptCommand::kOnePerGpu);
  c = script_of_command({"env", "NCCL_DEBUG=INFO", "torchrun", "train.py"});
  EXPECT_EQ(c.torchrun, 1);  // torchrun's default: one process
  EXPECT_EQ(script_of_command({"python3", "train.py"}).torchrun, 0);
}

TEST(ScriptCommand, TorchrunsThatTheProbeCannotFollowAreNamed) {
  EXPECT_THAT(command_error({"torchrun", "--nnodes", "2", "t.py"}), HasSubstr("--nnodes 2: colo runs a job on one server"));
  EXPECT_THAT(command_error({"torchrun", "--nproc-per-node", "cpu", "t.py"}), HasSubstr("trains on the CPU"));
  EXPECT_THAT(command_error({"torchrun", "--nproc-per-node", "0", "t.py"}), HasSubstr("expected 1..256, gpu or auto"));
  EXPECT_THAT(command_error({"torchrun", "--nproc-per-node=999", "t.py"}), HasSubstr("expected 1..256"));
  EXPECT_THAT(command_error({"torchrun", "--nproc-per-node=99999999999999999999", "t.py"}), HasSubstr("expected 1..256"));
  EXPECT_THAT(command_error({"torchrun", "--nproc-per-node"}), HasSubstr("needs a value"));
  EXPECT_THAT(command_error({"torchrun", "--no-python", "./bin"}), HasSubstr("runs no Python script file"));
  EXPECT_THAT(command_error({"torchrun", "-m", "pkg.train"}), HasSubstr("runs no Python script file"));
  EXPECT_THAT(command_error({"torchrun", "--frobnicate", "t.py"}), HasSubstr("option '--frobnicate' is not one the probe knows"));
  EXPECT_THAT(command_error({"torchrun", "--standalone"}), HasSubstr("torchrun names no script"));
  EXPECT_THAT(command_error({"python3", "-m", "torch.distributed.launch", "t.py"}), HasSubstr("run the job with torchrun"));
}

}  // namespace
}  // namespace colo::estimate
