#include "slurm/sbatch_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"

namespace colo::slurm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

SiteSettings sbatch_site40(const std::string& oversize = "whole_gpu") {
  SiteSettings s;
  s.shards_per_gpu = 40;
  s.oversize = oversize;
  return s;
}

TEST(SbatchArgs, SplitsOptionsScriptAndItsArguments) {
  const auto a = split_sbatch_args({"-J", "train", "--time=10", "--parsable", "-vv", "job.sh", "--lr", "0.1"});
  EXPECT_THAT(a.options, ElementsAre("-J", "train", "--time=10", "--parsable", "-vv"));
  EXPECT_EQ(a.script, "job.sh");
  EXPECT_THAT(a.script_args, ElementsAre("--lr", "0.1"));
}

TEST(SbatchArgs, TakesTheCommentOutAndKeepsWrap) {
  const auto a = split_sbatch_args({"--comment", "mine", "--wrap=python train.py"});
  EXPECT_EQ(a.user_comment, "mine");
  EXPECT_EQ(a.wrap, "python train.py");
  EXPECT_TRUE(a.script.empty());
  EXPECT_THAT(a.options, ElementsAre("--wrap=python train.py"));
}

TEST(SbatchArgs, RefusesTheUsersOwnGpuRequest) {
  for (const char* opt : {"--gres=gpu:1", "--gpus=1", "--gpus-per-node=2"}) {
    try {
      split_sbatch_args({opt, "job.sh"});
      ADD_FAILURE() << opt;
    } catch (const UserError& e) {
      EXPECT_THAT(e.what(), HasSubstr("colo sbatch sizes the GPU share")) << opt;
    }
  }
  EXPECT_THROW(split_sbatch_args({"-G", "1", "job.sh"}), UserError);
}

// getopt's forms: a short option with its value attached (-N1, -pmain, -c8), an optional-value
// flag (--nice); abbreviations of the options colo reads are refused (--comm would bypass
// colo's --comment); non-GPU generic resources are the user's and are kept.
TEST(SbatchArgs, ShortOptionsWithValuesAbbreviationsAndOtherGres) {
  auto a = split_sbatch_args({"-N1", "-pmain", "-c8", "--nice", "-Hv", "job.sh", "data"});
  EXPECT_THAT(a.options, ElementsAre("-N1", "-pmain", "-c8", "--nice", "-Hv"));
  EXPECT_EQ(a.script, "job.sh");
  EXPECT_THAT(a.script_args, ElementsAre("data"));
  for (const char* abbreviated : {"--comm=mine", "--gre=gpu:1", "--wra=x"}) {
    try {
      split_sbatch_args({abbreviated, "job.sh"});
      ADD_FAILURE() << abbreviated;
    } catch (const UserError& e) {
      EXPECT_THAT(e.what(), HasSubstr("give sbatch options in full")) << abbreviated;
    }
  }
  EXPECT_THROW(split_sbatch_args({"-Hpmain", "job.sh"}), UserError);  // a flag glued to a value option
  a = split_sbatch_args({"--gres=nvme:1", "job.sh"});
  EXPECT_THAT(a.other_gres, ElementsAre("nvme:1"));
  EXPECT_TRUE(a.options.empty());
  EXPECT_EQ(plan_sbatch(a, SbatchSizing{4096, "user", "", "u0-ab"}, sbatch_site40()).argv[1], "--gres=shard:5,nvme:1");
  EXPECT_THROW(split_sbatch_args({"--gres=nvme:1,gpu:1", "job.sh"}), UserError);
  EXPECT_THROW(split_sbatch_args({"--gres", "shard:4", "job.sh"}), UserError);
}

// The TRES spelling of a GPU item (gres:gpu:1, gres/gpu:1) is the same request to Slurm.
TEST(SbatchArgs, RefusesGpuItemsWithTheGresPrefixToo) {
  for (const char* opt : {"--gres=gres:gpu:1", "--gres=gres/gpu:1", "--gres=nvme:1,gres:shard:3"})
    EXPECT_THROW(split_sbatch_args({opt, "job.sh"}), UserError) << opt;
  EXPECT_THAT(split_sbatch_args({"--gres=gres:nvme:1", "job.sh"}).other_gres, ElementsAre("gres:nvme:1"));
}

// sbatch reads #SBATCH lines up to the first command; quotes group words; later lines, other
// comments and "#SBATCHX" are not directives.
TEST(ScriptDirectives, ReadAsSbatchReadsThem) {
  const std::string text =
      "#!/bin/bash\n"
      "# a comment\n"
      "\n"
      "#SBATCH -J 'my job' --time=10  # why\n"
      "#SBATCH --comment=\"project 42\"\r\n"
      "#SBATCHX --gres=gpu:1\n"
      "  #SBATCH --indented-is-a-comment\n"
      "echo start\n"
      "#SBATCH --gres=gpu:2\n";
  EXPECT_THAT(script_directives(text), ElementsAre("-J", "my job", "--time=10", "--comment=project 42"));
  try {
    script_directives("#SBATCH -J 'open\n");
    ADD_FAILURE();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("line 1: #SBATCH: unclosed ' quote"));
  }
}

// colo's --gres and --comment on sbatch's command line override the script's: so the script's
// GPU requests are refused, and its other GRES and comment kept unless the command line has its own.
TEST(ScriptDirectives, AreCheckedAndKeptWhereColoWouldOverrideThem) {
  auto a = split_sbatch_args({"job.sh"});
  apply_script_directives(a, {"--gres=nvme:1", "--comment=project-42", "-t", "10"}, "job.sh: #SBATCH");
  EXPECT_THAT(a.other_gres, ElementsAre("nvme:1"));
  EXPECT_EQ(a.user_comment, "project-42");
  const auto plan = plan_sbatch(a, SbatchSizing{4096, "user", "", "u0-ab"}, sbatch_site40());
  EXPECT_EQ(plan.argv[1], "--gres=shard:5,nvme:1");
  EXPECT_THAT(plan.argv[2], HasSubstr("project-42"));
  auto mine = split_sbatch_args({"--gres=license:1", "--comment=mine", "job.sh"});
  apply_script_directives(mine, {"--gres=nvme:1", "--comment=project-42"}, "job.sh: #SBATCH");
  EXPECT_THAT(mine.other_gres, ElementsAre("license:1"));
  EXPECT_EQ(mine.user_comment, "mine");
  for (const std::vector<std::string>& gpu : {std::vector<std::string>{"--gpus=2"}, {"--gres=gpu:1"}, {"-G", "1"}}) {
    auto b = split_sbatch_args({"job.sh"});
    try {
      apply_script_directives(b, gpu, "job.sh: #SBATCH");
      ADD_FAILURE() << gpu[0];
    } catch (const UserError& e) {
      EXPECT_THAT(e.what(), HasSubstr("job.sh: #SBATCH: '")) << gpu[0];
      EXPECT_THAT(e.what(), HasSubstr("colo sbatch sizes the GPU share")) << gpu[0];
    }
  }
}

TEST(SbatchArgs, ClearErrorsForMissingPieces) {
  EXPECT_THROW(split_sbatch_args({}), UserError);
  EXPECT_THROW(split_sbatch_args({"-J"}), UserError);                    // no value
  EXPECT_THROW(split_sbatch_args({"--wrap=x", "job.sh"}), UserError);    // both
  const auto a = split_sbatch_args({"--", "-odd-name.sh"});
  EXPECT_EQ(a.script, "-odd-name.sh");
}

TEST(SbatchPlan, EstimatePlusMarginBecomesShardsAndTheComment) {
  const auto a = split_sbatch_args({"--comment=mine", "-J", "t", "job.sh", "x"});
  const auto p = plan_sbatch(a, SbatchSizing{8192, "allocsim", "ResNet-50", "u0-ab"}, sbatch_site40());
  EXPECT_THAT(p.argv, ElementsAre("sbatch", "--gres=shard:9", "--comment=colo:mem_mib=8192,est=allocsim,fp=u0-ab mine",
                                  "-J", "t", "job.sh", "x"));
  EXPECT_THAT(p.summary, HasSubstr("9 shards"));
}

TEST(SbatchPlan, NoEstimateLeavesTheSizeToJobSubmitLua) {
  const auto p = plan_sbatch(split_sbatch_args({"job.sh"}), SbatchSizing{std::nullopt, "none", "", "u0-ab"}, sbatch_site40());
  EXPECT_EQ(p.argv[1], "--gres=shard");
  EXPECT_EQ(p.argv[2], "--comment=colo:est=none,fp=u0-ab");
}

TEST(SbatchPlan, MoreThanOneGpuIsAWholeGpuOrAClearRejection) {
  const auto a = split_sbatch_args({"job.sh"});
  const SbatchSizing big{50000, "user", "", "u0-ab"};
  EXPECT_EQ(plan_sbatch(a, big, sbatch_site40()).argv[1], "--gres=gpu:1");
  try {
    plan_sbatch(a, big, sbatch_site40("reject"));
    ADD_FAILURE();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("more than one GPU's 40"));
  }
  // Exactly one GPU still shares: 36 GiB + 10 % = 39.6 → 40 shards.
  EXPECT_EQ(plan_sbatch(a, SbatchSizing{36864, "user", "", ""}, sbatch_site40("reject")).argv[1], "--gres=shard:40");
}

}  // namespace
}  // namespace colo::slurm
