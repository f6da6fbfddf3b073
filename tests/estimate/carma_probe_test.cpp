// Which carma rows the probe rebuilds, and with what input (estimate/trace/carma_probe.h).
#include <gtest/gtest.h>

#include "estimate/trace/carma_probe.h"

namespace colo::estimate {
namespace {

DatasetRow row(const std::string& model, const std::string& data, int gpus = 1) {
  DatasetRow r;
  r.model = model;
  r.data = data;
  r.batch = 32;
  r.gpus = gpus;
  r.optimizer = Optimizer::AdamW;
  return r;
}

TEST(CarmaProbe, TorchvisionNetworksWithTheirDataSetsInput) {
  std::string why;
  auto p = carma_probe_request(row("resnet50", "imagenet"), why);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->model, "torchvision:resnet50");
  EXPECT_EQ(p->input, "3x224x224");
  EXPECT_EQ(p->num_classes, 0);
  EXPECT_EQ(p->optimizer, "adamw");
  EXPECT_EQ(p->batch, 32);
  p = carma_probe_request(row("inception_v3", "imagenet"), why);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->input, "3x299x299");
  p = carma_probe_request(row("mobilenet_v3_small", "cifar100"), why);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->input, "3x32x32");
  EXPECT_EQ(p->num_classes, 100);
  EXPECT_NO_THROW(p->arguments());
}

TEST(CarmaProbe, OthersAreSkippedWithAReason) {
  std::string why;
  EXPECT_FALSE(carma_probe_request(row("xception", "imagenet"), why));
  EXPECT_EQ(why, "no probe model for 'xception'");
  EXPECT_FALSE(carma_probe_request(row("resnet50", "imagenet", 2), why));
  EXPECT_EQ(why, "multi-GPU (DataParallel) rows are not probed yet");
  EXPECT_FALSE(carma_probe_request(row("resnet50", "wiki"), why));
  EXPECT_EQ(why, "unknown data set 'wiki'");
}

}  // namespace
}  // namespace colo::estimate
