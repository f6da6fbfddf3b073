// Which carma rows the probe rebuilds, and with what input (estimate/trace/carma_probe.h).
#include <gtest/gtest.h>

#include <algorithm>

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

// The transformer rows run the model files; 2-GPU rows are DataParallel over the whole batch.
TEST(CarmaProbe, TransformersAreModelFilesWithTheirSequenceLengthAndGpus) {
  std::string why;
  DatasetRow r = row("gpt2_large", "wiki", 2);
  r.seq_len = 512;
  auto p = carma_probe_request(r, why);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->model, probe_models_dir() + "/gpt2.py:gpt2_large");
  EXPECT_EQ(p->input, "512");
  EXPECT_EQ(p->data_parallel, 2);
  EXPECT_EQ(p->batch, 32);
  const auto args = p->arguments();
  EXPECT_NE(std::find(args.begin(), args.end(), "--data-parallel"), args.end());
  r = row("BERT_base", "wiki");
  p = carma_probe_request(r, why);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->model, probe_models_dir() + "/bert.py:bert_base");
  EXPECT_EQ(p->input, "512");  // the data set's default when the row states none
  EXPECT_EQ(p->data_parallel, 1);
  EXPECT_EQ(p->foreach, "off");  // transformers.AdamW: one parameter at a time
  // XLNet ran under transformers.Trainer: batch per device, DataParallel over the row's GPUs.
  p = carma_probe_request(row("xlnet_large", "wiki", 2), why);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->batch, 64);
  EXPECT_EQ(p->data_parallel, 2);
  EXPECT_EQ(p->foreach, "auto");
  EXPECT_EQ(ProbeRequest::from_json(p->to_json(), "t").to_json(), p->to_json());
}

TEST(CarmaProbe, OthersAreSkippedWithAReason) {
  std::string why;
  EXPECT_FALSE(carma_probe_request(row("xception", "imagenet"), why));
  EXPECT_EQ(why, "no probe model for 'xception'");
  EXPECT_FALSE(carma_probe_request(row("resnet50", "wiki"), why));
  EXPECT_EQ(why, "unknown data set 'wiki'");
}

}  // namespace
}  // namespace colo::estimate
