#include "core/autodiff/op_gradient.h"

#include <map>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace quantd::autodiff::internal {
namespace {

const std::map<std::string, OpGradient>& Table() {
  static const auto* table = new std::map<std::string, OpGradient>{
      {"Relu", {ActivationBackward, 1}},
      {"Clip", {ActivationBackward, 1}},
      {"LeakyRelu", {ActivationBackward, 1}},
      {"Sigmoid", {ActivationBackward, 1}},
      {"Tanh", {ActivationBackward, 1}},
      {"HardSigmoid", {ActivationBackward, 1}},
      {"HardSwish", {ActivationBackward, 1}},
      {"Add", {BinaryBackward, 2}},
      {"Sub", {BinaryBackward, 2}},
      {"Mul", {BinaryBackward, 2}},
      {"Div", {BinaryBackward, 2}},
      {"Conv", {ConvBackward, 3}},
      {"BatchNormalization", {BatchNormBackward, 5}},
      {"Gemm", {GemmBackward, 3}},
      {"MatMul", {MatMulBackward, 2}},
      {"Softmax", {SoftmaxBackward, 1}},
      {"MaxPool", {MaxPoolBackward, 1}},
      {"AveragePool", {AveragePoolBackward, 1}},
      {"GlobalAveragePool", {GlobalAveragePoolBackward, 1}},
      {"Reshape", {ReshapeLikeBackward, 1}},
      {"Flatten", {ReshapeLikeBackward, 1}},
      {"Squeeze", {ReshapeLikeBackward, 1}},
      {"Unsqueeze", {ReshapeLikeBackward, 1}},
      {"Identity", {ReshapeLikeBackward, 1}},
      {"Dropout", {ReshapeLikeBackward, 1}},
      {"Transpose", {TransposeBackward, 1}},
      {"Concat", {ConcatBackward, -1}},
      {"ReduceMean", {ReduceMeanBackward, 1}},
      {"Pow", {PowBackward, 1}},
      {"Sqrt", {SqrtBackward, 1}},
      {"Slice", {SliceBackward, 1}},
      {"Pad", {PadBackward, 1}},
      {"Resize", {ResizeBackward, 1}},
      {"ConvTranspose", {ConvTransposeBackward, 3}},
  };
  return *table;
}

}  // namespace

const OpGradient* FindOpGradient(const std::string& op_type) {
  auto it = Table().find(op_type);
  return it == Table().end() ? nullptr : &it->second;
}

bool IsNonDifferentiableOp(const std::string& op_type) {
  static const auto* ops =
      new absl::flat_hash_set<std::string>{"Shape",
                                           "Size",
                                           "NonZero",
                                           "ArgMax",
                                           "ArgMin",
                                           "Equal",
                                           "Greater",
                                           "Less",
                                           "GreaterOrEqual",
                                           "LessOrEqual",
                                           "Not",
                                           "And",
                                           "Or",
                                           "Xor",
                                           "IsNaN",
                                           "IsInf",
                                           "Constant",
                                           "ConstantOfShape",
                                           "Range",
                                           "EyeLike",
                                           "RandomNormal",
                                           "RandomUniform",
                                           "RandomNormalLike",
                                           "RandomUniformLike",
                                           "Floor",
                                           "Ceil",
                                           "Round",
                                           "Sign"};
  return ops->contains(op_type);
}

std::vector<std::string> DifferentiableOps() {
  std::vector<std::string> ops;
  for (const auto& [name, unused] : Table()) ops.push_back(name);
  return ops;
}

absl::Status NodeError(const OpGradContext& ctx, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat(ctx.node->Label(), ": ", what));
}

absl::Status NodeUnimplemented(const OpGradContext& ctx,
                               const std::string& what) {
  return absl::UnimplementedError(
      absl::StrCat(ctx.node->Label(), ": no gradient for ", what));
}

Tensor OutputGradOrZero(const OpGradContext& ctx, int k) {
  if (ctx.output_grads[k] != nullptr) return *ctx.output_grads[k];
  return Tensor(DType::kFloat, ctx.outputs[k]->shape());
}

absl::Status RequireFloat(const OpGradContext& ctx, const Tensor* t,
                          const char* what) {
  if (t == nullptr || t->dtype() != DType::kFloat) {
    return NodeError(ctx,
                     absl::StrCat(what,
                                  " must be a float tensor for "
                                  "gradients, got ",
                                  t == nullptr ? "none" : t->DebugString()));
  }
  return absl::OkStatus();
}

}  // namespace quantd::autodiff::internal
