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
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

bool SameTensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::equal(static_cast<const char*>(a.raw()),
                    static_cast<const char*>(a.raw()) + a.byte_size(),
                    static_cast<const char*>(b.raw()));
}

bool SameInfo(const ValueInfo& a, const ValueInfo& b) {
  return a.name == b.name && a.dtype == b.dtype && a.has_shape == b.has_shape &&
         a.shape == b.shape && a.dim_params == b.dim_params;
}

bool SameGraph(const Graph& a, const Graph& b);

bool SameAttribute(const Attribute& a, const Attribute& b) {
  if (a.type != b.type || a.i != b.i || a.s != b.s || a.ints != b.ints ||
      a.strings != b.strings || a.floats.size() != b.floats.size()) {
    return false;
  }
  // Bitwise float comparison (NaN-safe).
  if (std::memcmp(&a.f, &b.f, sizeof(float)) != 0) return false;
  for (size_t i = 0; i < a.floats.size(); ++i) {
    if (std::memcmp(&a.floats[i], &b.floats[i], sizeof(float)) != 0) {
      return false;
    }
  }
  if (a.t.defined() != b.t.defined() ||
      (a.t.defined() && !SameTensor(a.t, b.t))) {
    return false;
  }
  if ((a.g == nullptr) != (b.g == nullptr)) return false;
  return a.g == nullptr || SameGraph(*a.g, *b.g);
}

bool SameGraph(const Graph& a, const Graph& b) {
  if (a.name != b.name || a.nodes.size() != b.nodes.size() ||
      a.initializers.size() != b.initializers.size() ||
      a.inputs.size() != b.inputs.size() ||
      a.outputs.size() != b.outputs.size() ||
      a.value_info.size() != b.value_info.size() ||
      a.sub_byte_types != b.sub_byte_types) {
    return false;
  }
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node &x = a.nodes[i], &y = b.nodes[i];
    if (x.name != y.name || x.op_type != y.op_type || x.domain != y.domain ||
        x.inputs != y.inputs || x.outputs != y.outputs ||
        x.attributes.size() != y.attributes.size()) {
      return false;
    }
    for (const auto& [key, attr] : x.attributes) {
      auto it = y.attributes.find(key);
      if (it == y.attributes.end() || !SameAttribute(attr, it->second)) {
        return false;
      }
    }
  }
  for (const auto& [name, t] : a.initializers) {
    const Tensor* u = b.FindInitializer(name);
    if (u == nullptr || !SameTensor(t, *u)) return false;
  }
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    if (!SameInfo(a.inputs[i], b.inputs[i])) return false;
  }
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    if (!SameInfo(a.outputs[i], b.outputs[i])) return false;
  }
  for (const auto& [name, info] : a.value_info) {
    auto it = b.value_info.find(name);
    if (it == b.value_info.end() || !SameInfo(info, it->second)) return false;
  }
  return true;
}

bool SameModel(const Model& a, const Model& b) {
  return a.ir_version == b.ir_version && a.opset_import == b.opset_import &&
         a.producer_name == b.producer_name &&
         a.producer_version == b.producer_version &&
         a.doc_string == b.doc_string && a.metadata_props == b.metadata_props &&
         SameGraph(a.graph, b.graph);
}

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
