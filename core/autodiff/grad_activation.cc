// Element-wise activations: dx = f'(x) * dy with core/train's derivatives
// (ONNX attribute defaults; Clip's bounds from inputs 1, 2 or, before
// opset 11, from attributes).
#include <cmath>
#include <limits>
#include <vector>

#include "core/autodiff/op_gradient.h"
#include "core/train/activations.h"
#include "core/util/status_macros.h"

namespace quantd::autodiff::internal {
namespace {

using Kind = train::Activation::Kind;

absl::StatusOr<double> ScalarInput(const OpGradContext& ctx, size_t k,
                                   double fallback) {
  if (k >= ctx.inputs.size() || ctx.inputs[k] == nullptr) return fallback;
  const Tensor* t = ctx.inputs[k];
  if (t->dtype() != DType::kFloat || t->num_elements() != 1) {
    return NodeError(
        ctx, "Clip bound must be a float scalar, got " + t->DebugString());
  }
  return static_cast<double>(t->data<float>()[0]);
}

absl::StatusOr<train::Activation> ActivationOf(const OpGradContext& ctx) {
  const Node& n = *ctx.node;
  train::Activation a;
  const std::string& t = n.op_type;
  const double inf = std::numeric_limits<double>::infinity();
  if (t == "Relu") {
    a.kind = Kind::kRelu;
  } else if (t == "Clip") {
    a.kind = Kind::kClip;
    if (ctx.opset < 11) {
      a.a = n.GetFloat("min", -std::numeric_limits<float>::max());
      a.b = n.GetFloat("max", std::numeric_limits<float>::max());
    } else {
      ASSIGN_OR_RETURN(a.a, ScalarInput(ctx, 1, -inf));
      ASSIGN_OR_RETURN(a.b, ScalarInput(ctx, 2, inf));
    }
  } else if (t == "LeakyRelu") {
    a.kind = Kind::kLeakyRelu;
    a.a = n.GetFloat("alpha", 0.01f);
  } else if (t == "HardSigmoid") {
    a.kind = Kind::kHardSigmoid;
    a.a = n.GetFloat("alpha", 0.2f);
    a.b = n.GetFloat("beta", 0.5f);
  } else if (t == "HardSwish") {
    a.kind = Kind::kHardSwish;
    a.a = 1.0 / 6.0;
    a.b = 0.5;
  } else if (t == "Sigmoid") {
    a.kind = Kind::kSigmoid;
  } else if (t == "Tanh") {
    a.kind = Kind::kTanh;
  } else {
    return NodeUnimplemented(ctx, "this activation");
  }
  return a;
}

}  // namespace

absl::Status ActivationBackward(const OpGradContext& ctx,
                                std::vector<Tensor>* grads) {
  if (!ctx.wants[0]) return absl::OkStatus();
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[0], "input"));
  ASSIGN_OR_RETURN(const train::Activation act, ActivationOf(ctx));
  const Tensor& x = *ctx.inputs[0];
  const Tensor dy = OutputGradOrZero(ctx, 0);
  Tensor dx = Tensor::Uninitialized(DType::kFloat, x.shape());
  const float* px = x.data<float>();
  const float* pg = dy.data<float>();
  float* pd = dx.mutable_data<float>();
  const int64_t n = x.num_elements();
  switch (act.kind) {  // the common kinks inline, the rest through train::
    case Kind::kRelu:
      for (int64_t i = 0; i < n; ++i) pd[i] = px[i] > 0 ? pg[i] : 0.0f;
      break;
    case Kind::kClip: {
      const double lo = act.a, hi = act.b;
      for (int64_t i = 0; i < n; ++i) {
        pd[i] = px[i] > lo && px[i] < hi ? pg[i] : 0.0f;
      }
      break;
    }
    default:
      train::ActivationBackward(act, px, pg, pd, n);
  }
  (*grads)[0] = std::move(dx);
  return absl::OkStatus();
}

}  // namespace quantd::autodiff::internal
