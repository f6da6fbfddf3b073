// Reading the GPUMemNet CSVs: fields, skipped rows, malformed rows (file:line errors), the split.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "estimate/evaluation/dataset.h"
#include "estimate/gpumemnet/gpumemnet_dataset.h"

namespace colo::estimate {
namespace {

const char* kCnnHeader =
    "Filename,Depth,Activations-Params,Activation Function,Total Activations,Total Parameters,Batch Size,"
    "Max GPU Memory (MiB),Avg GPUTL,Avg GRACT,Avg SMACT,Avg SMOCC,Avg FP32A,Conv2d Count,BatchNorm2d Count,"
    "Dropout Count,AdaptiveAvgPool2d Count,Linear Count,Status\n";

std::string write(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("colo_gpumemnet_" + name);
  std::ofstream(path) << text;
  return path.string();
}

std::string message(const std::string& path, GpuMemNetFamily f) {
  try {
    load_gpumemnet_dataset(path, f);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(GpuMemNetDataset, ReadsRowsAndSkipsUnusableOnes) {
  const std::string path = write(
      "ok.csv", std::string(kCnnHeader) +
                    "a.out,2,\"[('conv2d', 100, 30), ('batch_norm2d', 100, 6), ('SELU', 100, 0), ('dropout', 100, 0), "
                    "('adaptive_avg_pool2d', 1, 0), ('linear', 5, 20), ('Softmax', 0, 0)]\",SELU,406,56,32,"
                    "2048,1,1,1,1,1,1,1,1,1,1,SUCCESSFUL\n"
                    "b.out,2,\"[('conv2d', 100, 30)]\",swish,100,30,8,38000,1,1,1,1,1,1,0,0,0,0,OOM_CRASH\n"
                    "c.out,0,[],None,0,0,30,0,48.5,0.298,0.618,0.123,0.017,0,0,0,0,0,SUCCESSFUL\n"
                    "d.out,1,\"[('conv2d', 4, 30)]\",ReLU,4,30,8,0,1,1,1,1,1,1,0,0,0,0,SUCCESSFUL\n");
  const auto ds = load_gpumemnet_dataset(path, GpuMemNetFamily::CNN);
  ASSERT_EQ(ds.rows.size(), 2u);
  EXPECT_EQ(ds.no_layers, 1);
  EXPECT_EQ(ds.unmeasured, 1);
  const auto& a = ds.rows[0];
  EXPECT_EQ(a.filename, "a.out");
  EXPECT_EQ(a.line, 2);
  EXPECT_EQ(a.inputs.conv, 1);
  EXPECT_EQ(a.inputs.batchnorm, 1);
  EXPECT_EQ(a.inputs.dropout, 1);
  EXPECT_EQ(a.inputs.linear, 1);
  EXPECT_EQ(a.inputs.depth, 2);
  EXPECT_EQ(a.inputs.params, 56);
  EXPECT_EQ(a.inputs.activations, 406);
  EXPECT_EQ(a.inputs.batch, 32);
  EXPECT_EQ(a.inputs.activation, "selu");
  EXPECT_EQ(a.measured_mib, 2048);
  EXPECT_FALSE(a.oom);
  EXPECT_TRUE(ds.rows[1].oom);
  EXPECT_EQ(ds.rows[1].inputs.activation, "silu");
}

TEST(GpuMemNetDataset, MalformedRowsNameFileAndLine) {
  const std::string good = "a.out,1,\"[('conv2d', 4, 30)]\",ReLU,4,30,8,100,1,1,1,1,1,1,0,0,0,0,SUCCESSFUL\n";
  const std::string p1 = write("bad1.csv", std::string(kCnnHeader) + good +
                                               "b.out,1,\"[('conv2d', 4, 30)]\",ReLU,4,30,eight,100,1,1,1,1,1,1,0,0,0,0,SUCCESSFUL\n");
  EXPECT_EQ(message(p1, GpuMemNetFamily::CNN), p1 + ":3: column 'Batch Size': 'eight' is not a number");
  const std::string p2 = write("bad2.csv", std::string(kCnnHeader) + good +
                                               "b.out,1,\"[('conv2d', 4, 30)]\",ReLU,4,30,8,100,1,1,1,1,1,1,0,0,0,0,MAYBE\n");
  EXPECT_EQ(message(p2, GpuMemNetFamily::CNN), p2 + ":3: Status 'MAYBE' is neither SUCCESSFUL nor OOM_CRASH");
  const std::string p3 = write("bad3.csv", std::string(kCnnHeader) + "a.out,1,\"[('conv2d', 4, 30)],ReLU\n");
  EXPECT_EQ(message(p3, GpuMemNetFamily::CNN), p3 + ":2: unterminated quoted field");
  const std::string p4 = write("bad4.csv", std::string(kCnnHeader) + "a.out,1,2\n");
  EXPECT_EQ(message(p4, GpuMemNetFamily::CNN), p4 + ":2: 3 fields, header has 19");
  const std::string p5 = write("bad5.csv", "Filename,Depth\nx,1\n");
  EXPECT_NE(message(p5, GpuMemNetFamily::MLP).find(p5 + ":1: no 'Activations-Params' column"), std::string::npos);
  const std::string p6 = write("bad6.csv", std::string(kCnnHeader) +
                                               "a.out,1,\"[('conv2d', 4, 30)]\",Hardshrink,4,30,8,100,1,1,1,1,1,1,0,0,0,0,SUCCESSFUL\n");
  EXPECT_NE(message(p6, GpuMemNetFamily::CNN).find(p6 + ":2: gpumemnet: activation function 'Hardshrink'"),
            std::string::npos);
  const std::string p7 = write("cnn_as_mlp.csv", std::string(kCnnHeader) + good);
  EXPECT_EQ(message(p7, GpuMemNetFamily::MLP),
            p7 + ":2: conv2d layers in an MLP row; is this the CNN set (--format gpumemnet-cnn)?");
  const std::string p8 = write("repeat.csv", std::string(kCnnHeader) + good + good);
  EXPECT_EQ(message(p8, GpuMemNetFamily::CNN), p8 + ":3: Filename 'a.out' repeats the row at line 2");
  EXPECT_EQ(message("/nonexistent/x.csv", GpuMemNetFamily::CNN), "/nonexistent/x.csv: cannot open GPUMemNet dataset");
  EXPECT_THROW(parse_gpumemnet_family("keras"), UserError);
}

TEST(GpuMemNetDataset, UnterminatedHeaderQuoteAndInvalidUtf8AreErrors) {
  const std::string good = "a.out,1,\"[('conv2d', 4, 30)]\",ReLU,4,30,8,100,1,1,1,1,1,1,0,0,0,0,SUCCESSFUL\n";
  const std::string p1 = write("utf8.csv", std::string(kCnnHeader) + good +
                                               "b\xff.out,1,\"[('conv2d', 4, 30)]\",ReLU,4,30,8,100,1,1,1,1,1,1,0,0,0,0,SUCCESSFUL\n");
  EXPECT_EQ(message(p1, GpuMemNetFamily::CNN), p1 + ":3: column 'Filename': not valid UTF-8");
  const std::string p2 = write("hquote.csv", "\"Filename,Depth\n" + good);
  EXPECT_EQ(message(p2, GpuMemNetFamily::CNN), p2 + ":1: unterminated quote in the header");
}

TEST(GpuMemNetDataset, SplitIsTheEstimatorsAndHoldsOutAFifth) {
  int test = 0;
  for (int i = 0; i < 1000; ++i) {
    const std::string name = "model_" + std::to_string(i) + ".out";
    EXPECT_NE(in_test_split(name), in_train_split(name));
    test += in_test_split(name);
  }
  EXPECT_GT(test, 150);
  EXPECT_LT(test, 250);
}

TEST(GpuMemNetDataset, SharedDatasetsLoadCompletely) {
  const std::string dir = std::string(COLO_SOURCE_DIR) + "/data/gpumemnet/";
  const auto mlp = load_gpumemnet_dataset(dir + "mlp.csv", GpuMemNetFamily::MLP);
  EXPECT_EQ(mlp.rows.size(), 2100u);
  const auto cnn = load_gpumemnet_dataset(dir + "cnn.csv", GpuMemNetFamily::CNN);
  EXPECT_EQ(cnn.rows.size() + static_cast<std::size_t>(cnn.no_layers + cnn.unmeasured), 1408u);
  EXPECT_EQ(cnn.no_layers, 56);
}

}  // namespace
}  // namespace colo::estimate
