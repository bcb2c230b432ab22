#include "core/graph/onnx_export.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "core/graph/onnx_import.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/graph/graph_test_util.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using testing_util::SameModel;
using testing_util::SameTensor;

absl::StatusOr<Model> RoundTrip(const Model& m) {
  absl::StatusOr<std::string> bytes = ExportOnnx(m);
  if (!bytes.ok()) return bytes.status();
  return ImportOnnx(*bytes);
}

TEST(OnnxExport, RoundTripKeepsTheIr) {
  ConvSpec conv;
  conv.input_shape = {-1, 2, 4, 4};
  conv.weight =
      Tensor::FromVector<float>(std::vector<float>(18, 0.25f), {1, 2, 3, 3});
  onnx::ModelProto proto = MakeConvModel(conv);
  auto* meta = proto.add_metadata_props();
  meta->set_key("author");
  meta->set_value("quantd");
  absl::StatusOr<Model> m = ImportOnnxModel(proto);
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<Model> back = RoundTrip(*m);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(SameModel(*m, *back));
  EXPECT_EQ(back->graph.inputs[0].dim_params[0], "d0");
  EXPECT_THAT(back->metadata_props,
              ElementsAre(std::make_pair(std::string("author"),
                                         std::string("quantd"))));
}

TEST(OnnxExport, Int4InitializerPacksLowNibbleFirst) {
  // 1 -> 0x1, -2 -> 0xE, 7 -> 0x7, -8 -> 0x8, 3 -> 0x3 (odd count: pad 0)
  // bytes: 0xE1, 0x87, 0x03
  Tensor t = Tensor::FromVector<int8_t>({1, -2, 7, -8, 3}, {5});
  absl::StatusOr<onnx::TensorProto> p = TensorToProto(t, "w", DType::kInt4);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->data_type(), 22);
  EXPECT_EQ(p->raw_data(), std::string("\xE1\x87\x03", 3));
  DType sub = DType::kUndefined;
  absl::StatusOr<Tensor> back = TensorFromProto(*p, 1 << 20, &sub);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(sub, DType::kInt4);
  EXPECT_TRUE(SameTensor(t, *back));
}

TEST(OnnxExport, Uint4RejectsOutOfRangeValues) {
  Tensor t = Tensor::FromVector<uint8_t>({3, 16}, {2});
  EXPECT_FALSE(TensorToProto(t, "w", DType::kUint4).ok());
  absl::StatusOr<onnx::TensorProto> p = TensorToProto(
      Tensor::FromVector<uint8_t>({15, 0, 9}, {3}), "w", DType::kUint4);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->data_type(), 21);
  EXPECT_EQ(p->raw_data(), std::string("\x0F\x09", 2));
}

TEST(OnnxExport, Int4ModelRoundTrips) {
  OnnxModelBuilder b(21, 10);
  b.Input("x", DType::kFloat, {2});
  onnx::TensorProto* w = b.graph()->add_initializer();
  w->set_name("q");
  w->set_data_type(22);
  w->add_dims(2);
  w->set_raw_data(std::string("\x7F", 1));  // 0xF -> -1, 0x7 -> 7
  b.FloatInitializer("scale", {0.5f}, {});
  b.AddNode("DequantizeLinear", {"q", "scale"}, {"dq"});
  b.AddNode("Add", {"x", "dq"}, {"y"});
  b.Output("y", DType::kFloat);
  absl::StatusOr<Model> m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->graph.FindInitializer("q")->span<int8_t>(),
              ElementsAre(-1, 7));
  absl::StatusOr<onnx::ModelProto> exported = ExportOnnxProto(*m);
  ASSERT_TRUE(exported.ok());
  bool found = false;
  for (const auto& init : exported->graph().initializer()) {
    if (init.name() != "q") continue;
    found = true;
    EXPECT_EQ(init.data_type(), 22);
    EXPECT_EQ(init.raw_data(), std::string("\x7F", 1));
  }
  EXPECT_TRUE(found);
  absl::StatusOr<Model> back = RoundTrip(*m);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(SameModel(*m, *back));
}

TEST(OnnxExport, EveryImportableNodeTestModelRoundTrips) {
  const fs::path dir = "/usr/share/libonnx-testdata/data/node";
  if (!fs::exists(dir)) GTEST_SKIP() << "libonnx-testdata not installed";
  int checked = 0;
  std::vector<std::string> failures;
  for (const auto& e : fs::directory_iterator(dir)) {
    absl::StatusOr<Model> m = ImportOnnxFile(e.path() / "model.onnx");
    if (!m.ok()) continue;
    ++checked;
    absl::StatusOr<Model> back = RoundTrip(*m);
    if (!back.ok()) {
      failures.push_back(e.path().filename().string() + ": " +
                         std::string(back.status().message()));
    } else if (!SameModel(*m, *back)) {
      failures.push_back(e.path().filename().string() + ": IR differs");
    }
  }
  std::cout << "round trip: " << checked - failures.size() << " of " << checked
            << " imported node models identical\n";
  EXPECT_TRUE(failures.empty())
      << failures.size()
      << " failed, first: " << (failures.empty() ? "" : failures[0]);
  EXPECT_GT(checked, 800);
}

}  // namespace
}  // namespace quantd
