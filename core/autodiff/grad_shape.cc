// Ops that only move values: Reshape, Flatten, Squeeze, Unsqueeze, Identity,
// Dropout (inference) give dy back in the input's shape; Transpose applies
// the inverse permutation; Concat cuts dy along the axis.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/autodiff/op_gradient.h"
#include "core/util/status_macros.h"

namespace quantd::autodiff::internal {

absl::Status ReshapeLikeBackward(const OpGradContext& ctx,
                                 std::vector<Tensor>* grads) {
  if (!ctx.wants[0]) return absl::OkStatus();
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[0], "input"));
  const Tensor dy = OutputGradOrZero(ctx, 0);
  auto reshaped = dy.Reshaped(ctx.inputs[0]->shape());
  if (!reshaped.ok()) return NodeError(ctx, reshaped.status().ToString());
  (*grads)[0] = std::move(reshaped).value();
  return absl::OkStatus();
}

absl::Status TransposeBackward(const OpGradContext& ctx,
                               std::vector<Tensor>* grads) {
  if (!ctx.wants[0]) return absl::OkStatus();
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[0], "input"));
  const Tensor& x = *ctx.inputs[0];
  const int rank = x.rank();
  std::vector<int64_t> perm = ctx.node->GetInts("perm");
  if (perm.empty()) {
    for (int d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  if (static_cast<int>(perm.size()) != rank) {
    return NodeError(ctx, "perm does not match the input rank");
  }
  const Tensor dy = OutputGradOrZero(ctx, 0);
  // y[i] = x[j] with j_perm[d] = i_d: walk y, scatter into dx.
  std::vector<int64_t> x_strides(rank, 1);
  for (int d = rank - 2; d >= 0; --d) {
    x_strides[d] = x_strides[d + 1] * x.dim(d + 1);
  }
  std::vector<int64_t> step(rank);  // x stride of each y dimension
  for (int d = 0; d < rank; ++d) step[d] = x_strides[perm[d]];
  Tensor dx = Tensor::Uninitialized(DType::kFloat, x.shape());
  const float* pg = dy.data<float>();
  float* pd = dx.mutable_data<float>();
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  const int64_t total = x.num_elements();
  for (int64_t i = 0; i < total; ++i) {
    pd[offset] = pg[i];
    for (int d = rank - 1; d >= 0; --d) {
      ++index[d];
      offset += step[d];
      if (index[d] < dy.dim(d)) break;
      offset -= step[d] * dy.dim(d);
      index[d] = 0;
    }
  }
  (*grads)[0] = std::move(dx);
  return absl::OkStatus();
}

absl::Status ConcatBackward(const OpGradContext& ctx,
                            std::vector<Tensor>* grads) {
  const Tensor& y = *ctx.outputs[0];
  const int rank = y.rank();
  int64_t axis = ctx.node->GetInt("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return NodeError(ctx, "axis out of range");
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= y.dim(d);
  for (int d = static_cast<int>(axis) + 1; d < rank; ++d) inner *= y.dim(d);
  const int64_t total_axis = y.dim(static_cast<int>(axis));
  const Tensor dy = OutputGradOrZero(ctx, 0);
  const float* pg = dy.data<float>();
  int64_t start = 0;
  for (size_t k = 0; k < ctx.inputs.size(); ++k) {
    const Tensor* x = ctx.inputs[k];
    if (x == nullptr) continue;
    const int64_t len = x->rank() == rank ? x->dim(static_cast<int>(axis)) : 0;
    if (ctx.wants[k]) {
      RETURN_IF_ERROR(RequireFloat(ctx, x, "input"));
      Tensor dx = Tensor::Uninitialized(DType::kFloat, x->shape());
      float* pd = dx.mutable_data<float>();
      for (int64_t o = 0; o < outer; ++o) {
        const float* src = pg + (o * total_axis + start) * inner;
        std::copy(src, src + len * inner, pd + o * len * inner);
      }
      (*grads)[k] = std::move(dx);
    }
    start += len;
  }
  return absl::OkStatus();
}

}  // namespace quantd::autodiff::internal
