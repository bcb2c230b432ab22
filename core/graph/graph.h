// The graph IR: an ONNX model as plain C++ values.
//
// A Model owns a Graph; nodes are kept in topological order once the graph
// has been validated (see validation.h). Tensor names connect nodes exactly as
// in ONNX; an empty input name is an absent optional input. Initializers are
// constant tensors; a graph input that has an initializer of the same name is
// treated as a constant (IR >= 4 semantics for exported models).
#ifndef QUANTD_CORE_GRAPH_GRAPH_H_
#define QUANTD_CORE_GRAPH_GRAPH_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/graph/tensor.h"

namespace quantd {

struct Graph;

struct Attribute {
  enum class Type {
    kUndefined = 0,
    kFloat = 1,
    kInt = 2,
    kString = 3,
    kTensor = 4,
    kGraph = 5,
    kFloats = 6,
    kInts = 7,
    kStrings = 8,
  };
  Type type = Type::kUndefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;  // If/Loop bodies
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

struct Node {
  std::string name;     // unique after import (generated when ONNX has none)
  std::string op_type;  // "Conv"
  std::string domain;   // "" or "ai.onnx" for the default domain
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attributes;

  bool HasAttribute(absl::string_view key) const;
  // Typed getters with defaults for absent attributes.
  int64_t GetInt(absl::string_view key, int64_t default_value) const;
  float GetFloat(absl::string_view key, float default_value) const;
  std::string GetString(absl::string_view key,
                        absl::string_view default_value) const;
  std::vector<int64_t> GetInts(absl::string_view key,
                               std::vector<int64_t> default_value = {}) const;
  std::vector<float> GetFloats(absl::string_view key,
                               std::vector<float> default_value = {}) const;
  const Attribute* FindAttribute(absl::string_view key) const;

  // Input k if present and non-empty, else "".
  const std::string& Input(size_t k) const;
  // "node 'conv_3' (Conv)": the prefix of every error about this node.
  std::string Label() const;
};

// Static shape: -1 marks a dynamic dimension (dim_param names kept aside).
struct ValueInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> shape;
  std::vector<std::string> dim_params;  // same length as shape; "" if static
  bool has_shape = false;               // false: rank unknown
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::map<std::string, Tensor> initializers;
  std::vector<ValueInfo> inputs;  // excludes inputs backed by initializers
  std::vector<ValueInfo> outputs;
  std::map<std::string, ValueInfo> value_info;  // inferred/declared types
  // Initializers that ONNX stores as packed 4-bit values (kInt4/kUint4): the
  // Tensor holds one value per int8/uint8 element; export packs them again.
  std::map<std::string, DType> sub_byte_types;

  const Tensor* FindInitializer(absl::string_view name) const;
  bool IsConstant(absl::string_view name) const {
    return FindInitializer(name) != nullptr;
  }
};

struct Model {
  int64_t ir_version = 0;
  std::map<std::string, int64_t>
      opset_import;  // domain ("" default) -> version
  std::string producer_name;
  std::string producer_version;
  std::string doc_string;
  std::vector<std::pair<std::string, std::string>> metadata_props;
  Graph graph;

  // Version of the default ONNX domain ("" or "ai.onnx").
  int64_t DefaultOpset() const;
};

}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_GRAPH_H_
