// OpView: what TPC attachment needs to know about one ONNX node, decoupled
// from the graph IR. The pipeline fills it from a graph node; layer filters
// and FrameworkInfo read it.
//
// Besides the node's own attributes, FindAttribute answers these pseudo
// attributes (usable in AttributeFilter.attr / attr_ref):
//   in_channels, out_channels, num_inputs   (int; absent when unknown)
//   input<i>.is_const   (int 0/1)    input<i>.rank    (int, constant inputs)
//   input<i>.value      (float, a constant input with exactly one element)
// and ONNX's default for an attribute the node leaves unset (e.g. Conv
// group = 1, Gemm transB = 0, LpNormalization p = 2).
#ifndef QUANTD_CORE_TPC_OP_VIEW_H_
#define QUANTD_CORE_TPC_OP_VIEW_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace quantd::tpc {

using AttrValue = std::variant<int64_t, double, std::string,
                               std::vector<int64_t>, std::vector<double>>;

struct OpInput {
  bool present = true;         // ONNX optional inputs may be omitted ("")
  bool is_constant = false;    // an initializer or Constant output
  std::vector<int64_t> shape;  // of a constant input
  std::optional<double> scalar_value;  // a constant input with one element
};

struct OpView {
  std::string name;
  std::string op_type;
  std::string domain;  // "" is ai.onnx
  std::map<std::string, AttrValue> attributes;
  std::vector<OpInput> inputs;
  int64_t in_channels = -1;   // -1: unknown
  int64_t out_channels = -1;  // -1: unknown
};

std::optional<AttrValue> FindAttribute(const OpView& op, std::string_view name);

// "ints [1, 2]", "3", "0.5", "\"same\"": for error messages and tools.
std::string AttrValueToString(const AttrValue& value);

}  // namespace quantd::tpc

#endif  // QUANTD_CORE_TPC_OP_VIEW_H_
