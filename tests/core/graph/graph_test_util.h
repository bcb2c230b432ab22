// Helpers shared by the graph tests: structural comparison of graph IRs,
// and what several files of graph_test (one unity translation unit) use.
#ifndef QUANTD_TESTS_CORE_GRAPH_GRAPH_TEST_UTIL_H_
#define QUANTD_TESTS_CORE_GRAPH_GRAPH_TEST_UTIL_H_

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/graph/onnx_import.h"
#include "core/graph/tensor.h"
#include "gtest/gtest.h"

namespace quantd {
namespace testing_util {

inline bool SameTensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::equal(static_cast<const char*>(a.raw()),
                    static_cast<const char*>(a.raw()) + a.byte_size(),
                    static_cast<const char*>(b.raw()));
}

inline bool SameInfo(const ValueInfo& a, const ValueInfo& b) {
  return a.name == b.name && a.dtype == b.dtype && a.has_shape == b.has_shape &&
         a.shape == b.shape && a.dim_params == b.dim_params;
}

inline bool SameGraph(const Graph& a, const Graph& b);

inline bool SameAttribute(const Attribute& a, const Attribute& b) {
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

inline bool SameGraph(const Graph& a, const Graph& b) {
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

inline bool SameModel(const Model& a, const Model& b) {
  return a.ir_version == b.ir_version && a.opset_import == b.opset_import &&
         a.producer_name == b.producer_name &&
         a.producer_version == b.producer_version &&
         a.doc_string == b.doc_string && a.metadata_props == b.metadata_props &&
         SameGraph(a.graph, b.graph);
}

}  // namespace testing_util

namespace graph_test {

// Debian's libonnx-testdata: ONNX's node test cases.
inline constexpr char kOnnxNodeTestDir[] =
    "/usr/share/libonnx-testdata/data/node";

// The repository root (ctest sets QUANTD_SOURCE_DIR).
inline std::filesystem::path SourceDir() {
  const char* dir = std::getenv("QUANTD_SOURCE_DIR");
  return dir != nullptr ? std::filesystem::path(dir)
                        : std::filesystem::current_path();
}

// Imports `proto`; a failure fails the test and gives an empty model.
inline Model ImportOrEmpty(const onnx::ModelProto& proto) {
  absl::StatusOr<Model> m = ImportOnnxModel(proto);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : Model();
}

}  // namespace graph_test
}  // namespace quantd

#endif  // QUANTD_TESTS_CORE_GRAPH_GRAPH_TEST_UTIL_H_
