// core/datagen: the BN loss gradient against finite differences, the image
// pipeline's backward as the adjoint of its forward, errors, and generation
// on a small BN network.
#include "core/datagen/data_generation.h"

#include <cmath>
#include <memory>

#include "core/datagen/bn_targets.h"
#include "core/datagen/calib_spec.h"
#include "core/datagen/image_pipeline.h"
#include "core/datagen/losses.h"
#include "gtest/gtest.h"
#include "tests/core/autodiff/fd_check.h"
#include "tests/core/executor/test_util.h"

namespace quantd::datagen {
namespace {

using autodiff::testing::RandomTensor;
using quantd::testing::Ints;
using quantd::testing::ModelBuilder;

BnTarget Target(int64_t c) {
  BnTarget t;
  t.tensor = "x";
  for (int64_t i = 0; i < c; ++i) {
    t.mean.push_back(0.3f * i - 0.2f);
    t.std.push_back(0.5f + 0.25f * i);
  }
  return t;
}

double BnLoss(const BnTarget& t, const std::vector<Tensor>& xs) {
  ChannelSums sums;
  for (const Tensor& x : xs) EXPECT_TRUE(AddChannelSums(t, x, &sums).ok());
  return BnAlignment(t, sums, 0.5).loss;
}

TEST(BnAlignmentTest, GradientMatchesFiniteDifferences) {
  const BnTarget t = Target(3);
  std::vector<Tensor> xs = {RandomTensor({1, 3, 2, 3}, 70),
                            RandomTensor({1, 3, 2, 3}, 71, 2.0f, 0.5f)};
  ChannelSums sums;
  for (const Tensor& x : xs) ASSERT_TRUE(AddChannelSums(t, x, &sums).ok());
  const BnGradient g = BnAlignment(t, sums, 0.5);
  for (size_t k = 0; k < xs.size(); ++k) {
    const Tensor seed = BnSeed(g, xs[k]);
    for (int64_t i = 0; i < xs[k].num_elements(); i += 5) {
      const double h = 1e-2;
      std::vector<Tensor> plus = xs, minus = xs;
      plus[k] = plus[k].Clone();
      minus[k] = minus[k].Clone();
      plus[k].mutable_data<float>()[i] += h;
      minus[k].mutable_data<float>()[i] -= h;
      const double fd = (BnLoss(t, plus) - BnLoss(t, minus)) / (2 * h);
      EXPECT_NEAR(seed.data<float>()[i], fd, 1e-4 + 1e-2 * std::abs(fd))
          << k << "[" << i << "]";
    }
  }
}

TEST(BnAlignmentTest, LossIsZeroAtTheTargetStatistics) {
  // Channel 0 of x = {m - s, m + s}: mean m, std s (population).
  BnTarget t;
  t.tensor = "x";
  t.mean = {0.5f};
  t.std = {2.0f};
  ChannelSums sums;
  ASSERT_TRUE(
      AddChannelSums(t, quantd::testing::F({-1.5f, 2.5f}, {1, 1, 2}), &sums)
          .ok());
  EXPECT_NEAR(BnAlignment(t, sums, 1.0).loss, 0.0, 1e-9);
}

TEST(ImagePipelineTest, BackwardIsTheAdjointOfForward) {
  // Without clipping the pipeline is linear: <F p, r> = <p, F^T r>.
  ImageGeometry g;
  g.channels = 2;
  g.height = 4;
  g.width = 5;
  g.extra = 3;
  const Tensor p = RandomTensor({g.padded_size()}, 72);
  const Tensor r = RandomTensor({g.size()}, 73);
  for (bool flip : {false, true}) {
    Augmentation a{flip, 1, 2};
    std::vector<float> x(g.size()), back(g.padded_size()), scratch;
    PipelineForward(g, a, p.data<float>(), x.data(), &scratch);
    PipelineBackward(g, a, r.data<float>(), back.data(), &scratch);
    double lhs = 0, rhs = 0;
    for (int64_t i = 0; i < g.size(); ++i) lhs += x[i] * r.data<float>()[i];
    for (int64_t i = 0; i < g.padded_size(); ++i) {
      rhs += back[i] * p.data<float>()[i];
    }
    EXPECT_NEAR(lhs, rhs, 1e-4) << flip;
  }
}

// x [N, 3, 8, 8] -> Conv -> BN -> Relu -> GlobalAveragePool.
Model BnNetwork(bool with_bn) {
  ModelBuilder b(13);
  b.Input("x")
      .Initializer("w", RandomTensor({4, 3, 3, 3}, 74, 0.3f))
      .Add("Conv", {"x", "w"}, {"c"}, {{"pads", Ints({1, 1, 1, 1})}});
  std::string last = "c";
  if (with_bn) {
    b.Initializer("scale", RandomTensor({4}, 75, 0.1f, 1.0f))
        .Initializer("bias", RandomTensor({4}, 76, 0.1f))
        .Initializer("mean", quantd::testing::F({0.5f, -0.3f, 0.2f, 0.0f}, {4}))
        .Initializer("var", quantd::testing::F({0.3f, 1.5f, 0.8f, 0.5f}, {4}))
        .Add("BatchNormalization", {"c", "scale", "bias", "mean", "var"},
             {"bn"});
    last = "bn";
  }
  b.Add("Relu", {last}, {"r"}).Add("GlobalAveragePool", {"r"}, {"y"});
  b.Output("y");
  Model m = b.Build();
  m.graph.inputs[0].shape = {-1, 3, 8, 8};
  m.graph.inputs[0].has_shape = true;
  return m;
}

DataGenOptions SmallOptions() {
  DataGenOptions o;
  o.count = 4;
  o.batch_size = 4;
  o.iterations = 40;
  o.learning_rate = 0.05;
  o.extra_pixels = 2;
  return o;
}

TEST(DataGenerationTest, OptimisationReducesTheLossAndKeepsTheRange) {
  auto data = GenerateData(std::make_shared<const Model>(BnNetwork(true)),
                           SmallOptions());
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->aligned_tensors, 1);
  EXPECT_LT(data->final_loss, 0.5 * data->first_loss);
  ASSERT_EQ(data->samples.size(), 4u);
  const float lo = -0.485f / 0.229f, hi = (1 - 0.406f) / 0.225f;
  for (const Tensor& s : data->samples) {
    EXPECT_EQ(s.shape(), (std::vector<int64_t>{1, 3, 8, 8}));
    for (float v : s.span<float>()) {
      EXPECT_GE(v, lo);
      EXPECT_LE(v, hi);
    }
  }
}

TEST(DataGenerationTest, ResultDoesNotDependOnThePoolSize) {
  auto model = std::make_shared<const Model>(BnNetwork(true));
  DataGenOptions o = SmallOptions();
  o.iterations = 5;
  ThreadPool pool(2);
  auto serial = GenerateData(model, o);
  auto parallel = GenerateData(model, o, {&pool});
  ASSERT_TRUE(serial.ok() && parallel.ok());
  for (size_t i = 0; i < serial->samples.size(); ++i) {
    const auto a = serial->samples[i].span<float>();
    const auto b = parallel->samples[i].span<float>();
    ASSERT_TRUE(std::equal(a.begin(), a.end(), b.begin())) << i;
  }
}

TEST(DataGenerationTest, FoldedModelWithoutStatisticsNamesWhatIsMissing) {
  auto data = GenerateData(std::make_shared<const Model>(BnNetwork(false)),
                           SmallOptions());
  EXPECT_EQ(data.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(data.status().message().find("BatchNormalization"),
            std::string::npos);
  EXPECT_NE(data.status().message().find("mean and std of the Conv outputs"),
            std::string::npos)
      << data.status();
}

TEST(DataGenerationTest, FoldedModelAlignsTheStatisticsPassed) {
  DataGenOptions o = SmallOptions();
  o.statistics["c"] = {{0.1f, 0.2f, -0.1f, 0.0f}, {0.5f, 0.5f, 1.0f, 1.0f}};
  auto data = GenerateData(std::make_shared<const Model>(BnNetwork(false)), o);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_LT(data->final_loss, 0.5 * data->first_loss);
}

// Kernels of 3e38 overflow float activations at the first iteration: the
// job fails naming the stage instead of returning images of NaN.
TEST(DataGenerationTest, DivergedOptimisationFailsNamingTheStage) {
  Model m = BnNetwork(true);
  m.graph.initializers["w"] = RandomTensor({4, 3, 3, 3}, 74, 3e38f);
  auto data = GenerateData(std::make_shared<const Model>(m), SmallOptions());
  EXPECT_EQ(data.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(data.status().message().find("generate: the loss is"),
            std::string::npos)
      << data.status();
}

TEST(DataGenerationTest, DynamicInputWithoutShapeIsInvalid) {
  Model m = BnNetwork(true);
  m.graph.inputs[0].shape = {-1, 3, -1, -1};
  auto data = GenerateData(std::make_shared<const Model>(m), SmallOptions());
  EXPECT_EQ(data.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(data.status().message().find("--shape"), std::string::npos);
}

// The image input's errors name the option and the input: a shape that
// contradicts a static dim, a size out of range, a range of the wrong length.
TEST(DataGenerationTest, InputGeometryErrorsNameTheOptionAndTheInput) {
  const Model m = BnNetwork(true);
  std::string name;
  DataGenOptions o = SmallOptions();
  o.shape = {4, 8, 8};
  EXPECT_EQ(InputGeometry(m.graph, o, &name).status().message(),
            "shape dim 1 is 4 but input 'x' declares 3");
  Model dynamic = BnNetwork(true);
  dynamic.graph.inputs[0].shape = {-1, 3, -1, -1};
  o.shape = {3, 20000, 8};
  EXPECT_EQ(InputGeometry(dynamic.graph, o, &name).status().message(),
            "shape: 20000 is not in [1, 16384] (input 'x')");
  o.shape = {3, 8, 8};
  o.input_min = {0, 0};
  o.input_max = {1, 1};
  EXPECT_EQ(InputGeometry(m.graph, o, &name).status().message(),
            "input_min / input_max: 2 values; give one, or one per channel "
            "of input 'x' (3)");
  o.input_min = {0};
  o.input_max = {1};
  auto geo = InputGeometry(m.graph, o, &name);
  ASSERT_TRUE(geo.ok()) << geo.status();
  EXPECT_EQ(name, "x");
  EXPECT_EQ(geo->channels, 3);
  EXPECT_EQ(geo->height, 8);
}

TEST(DataGenerationTest, CancelledTokenStopsTheLoop) {
  CancellationToken token;
  token.Cancel();
  auto data = GenerateData(std::make_shared<const Model>(BnNetwork(true)),
                           SmallOptions(), {nullptr, &token});
  EXPECT_EQ(data.status().code(), absl::StatusCode::kCancelled);
}

TEST(CalibSpecTest, ParsesEveryKey) {
  auto o = ParseGeneratedCalibSpec(
      "generated:16,shape=3x48x192,range=-1:1,iterations=50,batch=8,lr=0.2,"
      "seed=7");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->count, 16);
  EXPECT_EQ(o->shape, (std::vector<int64_t>{3, 48, 192}));
  EXPECT_EQ(o->input_min, std::vector<float>{-1.0f});
  EXPECT_EQ(o->input_max, std::vector<float>{1.0f});
  EXPECT_EQ(o->iterations, 50);
  EXPECT_EQ(o->batch_size, 8);
  EXPECT_DOUBLE_EQ(o->learning_rate, 0.2);
  EXPECT_EQ(o->seed, 7u);
}

TEST(CalibSpecTest, UnknownKeyIsNamed) {
  auto o = ParseGeneratedCalibSpec("generated:4,colour=red");
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(o.status().message().find("'colour=red'"), std::string::npos);
}

TEST(CalibSpecTest, FolderIsNotASpec) {
  EXPECT_FALSE(IsGeneratedCalibSpec("calib/generated"));
  EXPECT_TRUE(IsGeneratedCalibSpec("generated:8"));
}

// x -> Conv -> c1 -> Relu -> r1 -> Conv -> c2 -> Conv -> c3: aligning c3
// leaves 2 of the 3 layers before it unconstrained (warned); c2 only 1.
// (Counts by hand: a tensor sits at the number of layers before its
// producer.)
TEST(AlignmentCoverageTest, WarnsWhenMostLayersLieBetweenAlignedTensors) {
  Graph g;
  ValueInfo x;
  x.name = "x";
  g.inputs.push_back(x);
  auto add = [&](const std::string& op, const std::string& in,
                 const std::string& out) {
    Node n;
    n.op_type = op;
    n.name = out + "_node";
    n.inputs = {in};
    n.outputs = {out};
    g.nodes.push_back(n);
  };
  add("Conv", "x", "c1");
  add("Relu", "c1", "r1");
  add("Conv", "r1", "c2");
  add("Conv", "c2", "c3");
  const std::string late = AlignmentCoverageWarning(g, {"c3"});
  EXPECT_NE(late.find("2 of the model's 3 Conv/Gemm/MatMul layers lie "
                      "between the input and 'c3'"),
            std::string::npos)
      << late;
  EXPECT_EQ(AlignmentCoverageWarning(g, {"c2", "c3"}), "");
  EXPECT_EQ(AlignmentCoverageWarning(g, {"c1"}), "");
  EXPECT_EQ(AlignmentCoverageWarning(g, {"x"}), "");
  // A gap in the middle: c1 then c5 of five layers leaves c2..c4.
  add("Conv", "c3", "c4");
  add("Conv", "c4", "c5");
  const std::string middle = AlignmentCoverageWarning(g, {"c1", "c5"});
  EXPECT_NE(middle.find("3 of the model's 5 Conv/Gemm/MatMul layers lie "
                        "between 'c1' and 'c5'"),
            std::string::npos)
      << middle;
}

}  // namespace
}  // namespace quantd::datagen
