#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "data_path.h"
#include "sim/estimator.h"
#include "sim/simulator.h"
#include "sim/workloads/trace.h"
#include "sim/workloads/workload_catalog.h"

namespace colo::sim {
namespace {

using ::testing::HasSubstr;

const char* kHeader =
    "workload,model,dataset,batch_size,gpus,epochs,epoch_minutes,measured_mib,horus_mib,faketensor_mib,"
    "gpumemnet_mib,summary,source,optimizer,seq_len\n";

std::string catalog_error(const std::string& text) {
  try {
    WorkloadCatalog::parse(text, "w.csv");
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(WorkloadCatalog, ReadsTheThesisCatalog) {
  const auto c = WorkloadCatalog::load(test::carma("workloads.csv"));
  EXPECT_EQ(c.all().size(), 49u);
  const Workload* r = c.find("resnet");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->true_mib, 5262);
  EXPECT_NEAR(r->solo_seconds, 36.315977 * 60, 1e-6);
  EXPECT_EQ(r->horus_mib, 7904);
  EXPECT_EQ(r->smact_class, "imagenet_cnn");
  const Workload* x = c.find("xlnet_base_cased_2");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->gpus, 2);
  EXPECT_NEAR(x->solo_seconds, 8 * 8.949518 * 60, 1e-6);
  EXPECT_EQ(x->smact_class, "transformer");
  EXPECT_FALSE(x->assumed_runtime);
}

TEST(WorkloadCatalog, FillsUnpublishedValuesFromDocumentedAssumptions) {
  const auto c = WorkloadCatalog::load(test::carma("workloads.csv"));
  const Workload* m = c.find("mnist_train");
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->assumed_runtime);
  EXPECT_FALSE(m->assumed_memory);
  EXPECT_EQ(m->true_mib, 1776);
  EXPECT_NEAR(m->solo_seconds, 14 * 0.3 * 60, 1e-9);
  const Workload* g = c.find("gpt2_xl");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(g->assumed_memory);
  EXPECT_FALSE(g->horus_mib.has_value());  // empty estimate cells stay unknown
}

TEST(WorkloadCatalog, SmactColumnOverridesTheClassTable) {
  const auto c = WorkloadCatalog::parse(
      "workload,model,dataset,batch_size,gpus,epochs,epoch_minutes,measured_mib,horus_mib,faketensor_mib,"
      "gpumemnet_mib,source,smact\n"
      "a,m,somewhere,8,1,1,2,1000,,,,x,0.4\n",
      "w.csv");
  EXPECT_DOUBLE_EQ(c.find("a")->smact, 0.4);
  EXPECT_EQ(c.find("a")->solo_seconds, 120);
}

// A measured busy share (what `colo bench collocation` records) is what a job takes from the GPU
// under streams: a data-bound job that is busy 5 % of the time slows its co-runner far less than
// the model's default for a training loop (busy ≥ 0.8) would; MPS does not look at it.
TEST(WorkloadCatalog, BusyColumnReachesTheStreamsModel) {
  const std::string head =
      "workload,model,dataset,batch_size,gpus,epochs,epoch_minutes,measured_mib,horus_mib,faketensor_mib,"
      "gpumemnet_mib,source,smact,busy\n"
      "heavy,m,x,8,1,1,60,1000,,,,x,0.8,\n";
  const auto run = [&](const std::string& light_busy, SharingKind sharing) {
    const auto c = WorkloadCatalog::parse(head + "light,m,x,8,1,1,60,1000,,,,x,0.05," + light_busy + "\n", "w.csv");
    const Trace t = parse_trace("submit_offset_s,workload\n0,heavy\n0,light\n", "t.csv", c);
    SimConfig cfg;
    cfg.gpus = 1;
    cfg.sharing = sharing;
    Conditions cond;
    cond.enabled = false;  // both on the one GPU at once
    cfg.scheduler.policy = make_policy(PolicyKind::RoundRobin, cond);
    const auto jobs = jobs_from_trace(t, make_estimator("oracle", {}));
    return simulate(cfg, jobs).outcomes[0].finish_s;  // the heavy job
  };
  EXPECT_LT(run("0.05", SharingKind::Streams), run("", SharingKind::Streams));
  EXPECT_EQ(run("0.05", SharingKind::Mps), run("", SharingKind::Mps));
  const auto c = WorkloadCatalog::parse(head + "light,m,x,8,1,1,60,1000,,,,x,0.05,0.05\n", "w.csv");
  EXPECT_EQ(c.find("light")->busy, 0.05);
  EXPECT_FALSE(c.find("heavy")->busy);
  EXPECT_THAT(catalog_error(head + "light,m,x,8,1,1,60,1000,,,,x,0.3,0.2\n"),
              HasSubstr("w.csv:3: busy must be in [smact, 1] = [0.3, 1] (a kernel runs whenever SMs are active), got 0.2"));
  EXPECT_THAT(catalog_error(head + "light,m,x,8,1,1,60,1000,,,,x,0.3,1.5\n"), HasSubstr("w.csv:3: busy must be in [smact, 1]"));
}

TEST(WorkloadCatalog, BadInputNamesFileAndLine) {
  const std::string ok = "a,resnet50,imagenet,32,1,1,2,1000,900,800,8000,s.model,table6.2,adam,\n";
  EXPECT_EQ(catalog_error(std::string(kHeader) + ok), "(no error)");
  EXPECT_THAT(catalog_error("workload,model\na,b\n"), HasSubstr("w.csv:1: missing column 'dataset'"));
  // A misspelt optional column (smcat for smact) would be ignored, its values never used.
  EXPECT_THAT(catalog_error(std::string(kHeader).substr(0, std::string(kHeader).size() - 1) + ",smcat\n" +
                       ok.substr(0, ok.size() - 1) + ",0.5\n"),
              HasSubstr("w.csv:1: unknown column 'smcat' (known: workload, model,"));
  EXPECT_THAT(catalog_error(std::string(kHeader) + ok + "b,resnet50,imagenet,32,1,1,two,1000,900,800,8000,s,t,adam,\n"),
              HasSubstr("w.csv:3: column 'epoch_minutes': 'two' is not a number"));
  EXPECT_THAT(catalog_error(std::string(kHeader) + ok + ok), HasSubstr("w.csv:3: workload 'a' already defined on line 2"));
  EXPECT_THAT(catalog_error(std::string(kHeader) + "a,resnet50,imagenet,32,1,1,,1000,900,800,8000,s,table6.2,adam,\n"),
              HasSubstr("w.csv:2: column 'epoch_minutes' is empty"));
  EXPECT_THAT(catalog_error(std::string(kHeader) + "a,resnet50,imagenet,32,0,1,2,1000,900,800,8000,s,t,adam,\n"),
              HasSubstr("w.csv:2: column 'gpus': 0 is out of range (expected 1..1024)"));
  EXPECT_THAT(catalog_error(std::string(kHeader) + "a,resnet50,imagenet,32,1,1,2,1000,900,800,8000,s,t,lamb,\n"),
              HasSubstr("w.csv:2: column 'optimizer': unknown optimizer 'lamb'"));
  EXPECT_THAT(catalog_error(std::string(kHeader) + "a,resnet50,imagenet,32,1,1,2,-5,900,800,8000,s,t,adam,\n"),
              HasSubstr("w.csv:2: measured_mib must be positive"));
  EXPECT_THAT(catalog_error(std::string(kHeader) + "a,resnet50,imagenet,32,1,1,2,1000,900,800\n"),
              HasSubstr("w.csv:2: 10 fields, the header has 15"));
  EXPECT_THAT(catalog_error(std::string(kHeader) + "a,m,moon,32,1,1,2,1000,900,800,8000,s,t,adam,\n"),
              HasSubstr("w.csv:2: cannot tell the SM activity of dataset 'moon'"));
  EXPECT_THAT(catalog_error(std::string(kHeader) + "zz,m,mnist,32,1,1,,1000,900,800,8000,s,no-runtime-published,adam,\n"),
              HasSubstr("w.csv:2: workload 'zz' has no published epoch time"));
  EXPECT_THAT(catalog_error(kHeader), HasSubstr("w.csv: no workloads"));
  EXPECT_THAT(catalog_error(std::string(kHeader) + "a,\"m\",imagenet,32,1,1,2,1000,900,800,8000,s,t,adam,\n"),
              HasSubstr("w.csv:2: quoted fields"));
}

TEST(WorkloadCatalog, MissingFileIsAUserError) {
  EXPECT_THROW(WorkloadCatalog::load("/nonexistent/w.csv"), UserError);
}

}  // namespace
}  // namespace colo::sim
