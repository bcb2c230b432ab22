#include "core/tpc/op_view.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace quantd::tpc {
namespace {

// ONNX defaults for attributes that the default mapping filters on.
std::optional<AttrValue> OnnxDefault(const std::string& op_type,
                                     std::string_view attr) {
  if ((op_type == "Conv" || op_type == "ConvTranspose") && attr == "group") {
    return int64_t{1};
  }
  if (op_type == "Gemm" && (attr == "transA" || attr == "transB")) {
    return int64_t{0};
  }
  if (op_type == "LpNormalization" && attr == "p") return int64_t{2};
  if (op_type == "LpNormalization" && attr == "axis") return int64_t{-1};
  if (op_type == "Pad" && attr == "mode") return std::string("constant");
  return std::nullopt;
}

std::optional<AttrValue> InputPseudo(const OpView& op, std::string_view name) {
  // input<i>.<what>
  if (name.substr(0, 5) != "input") return std::nullopt;
  std::vector<std::string> parts =
      absl::StrSplit(std::string(name.substr(5)), '.');
  int index = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &index) || index < 0) {
    return std::nullopt;
  }
  if (static_cast<size_t>(index) >= op.inputs.size() ||
      !op.inputs[index].present) {
    return std::nullopt;
  }
  const OpInput& in = op.inputs[index];
  if (parts[1] == "is_const") return int64_t{in.is_constant ? 1 : 0};
  if (parts[1] == "rank" && in.is_constant) {
    return static_cast<int64_t>(in.shape.size());
  }
  if (parts[1] == "value" && in.scalar_value) return *in.scalar_value;
  return std::nullopt;
}

}  // namespace

std::optional<AttrValue> FindAttribute(const OpView& op,
                                       std::string_view name) {
  if (auto it = op.attributes.find(std::string(name));
      it != op.attributes.end()) {
    return it->second;
  }
  if (name == "in_channels") {
    if (op.in_channels < 0) return std::nullopt;
    return op.in_channels;
  }
  if (name == "out_channels") {
    if (op.out_channels < 0) return std::nullopt;
    return op.out_channels;
  }
  if (name == "num_inputs") return static_cast<int64_t>(op.inputs.size());
  if (auto v = InputPseudo(op, name)) return v;
  return OnnxDefault(op.op_type, name);
}

std::string AttrValueToString(const AttrValue& value) {
  struct Visitor {
    std::string operator()(int64_t v) const { return absl::StrCat(v); }
    std::string operator()(double v) const { return absl::StrCat(v); }
    std::string operator()(const std::string& v) const {
      return absl::StrCat("\"", v, "\"");
    }
    std::string operator()(const std::vector<int64_t>& v) const {
      return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
    }
    std::string operator()(const std::vector<double>& v) const {
      return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
    }
  };
  return std::visit(Visitor{}, value);
}

}  // namespace quantd::tpc
