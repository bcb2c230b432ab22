// Constant evaluation of ONNX reduction ops (onnx/defs/reduction):
// ReduceProd, ReduceSum.
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/graph/constant_eval.h"
#include "core/graph/constant_eval/families.h"
#include "core/graph/constant_eval/helpers.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace constant_eval_internal {
namespace {

absl::StatusOr<Tensor> ReduceOp(const Node& node,
                                absl::Span<const Tensor* const> in,
                                int64_t opset, int64_t max_elements) {
  const Tensor& x = *in[0];
  const bool axes_input =
      node.op_type == "ReduceSum" ? opset >= 13 : opset >= 18;
  ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                   AxesFrom(node, in, 1, axes_input));
  const bool keep = node.GetInt("keepdims", 1) != 0;
  if (axes.empty() && node.GetInt("noop_with_empty_axes", 0) != 0) return x;
  std::vector<bool> reduce(x.rank(), axes.empty());
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, a, x.rank()));
    reduce[axis] = true;
  }
  Shape out_shape, kept_shape;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (reduce[i]) {
      if (keep) out_shape.push_back(1);
      kept_shape.push_back(1);
    } else {
      out_shape.push_back(x.dim(i));
      kept_shape.push_back(x.dim(i));
    }
  }
  ASSIGN_OR_RETURN(Tensor out,
                   NewTensor(node, x.dtype(), out_shape, max_elements));
  const bool prod = node.op_type == "ReduceProd";
  const std::vector<int64_t> out_strides = Strides(kept_shape);
  std::vector<double> acc_f(out.num_elements(), prod ? 1.0 : 0.0);
  std::vector<int64_t> acc_i(out.num_elements(), prod ? 1 : 0);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    int64_t rem = i, o = 0;
    for (int64_t d = x.rank() - 1; d >= 0; --d) {
      const int64_t c = rem % x.dim(d);
      rem /= x.dim(d);
      if (!reduce[d]) o += c * out_strides[d];
    }
    if (IsFloating(x.dtype())) {
      acc_f[o] =
          prod ? acc_f[o] * Get<double>(x, i) : acc_f[o] + Get<double>(x, i);
    } else {
      const auto a = static_cast<uint64_t>(acc_i[o]);
      const auto v = static_cast<uint64_t>(Get<int64_t>(x, i));
      acc_i[o] = static_cast<int64_t>(prod ? a * v : a + v);
    }
  }
  for (int64_t o = 0; o < out.num_elements(); ++o) {
    if (IsFloating(x.dtype())) {
      SetDouble(&out, o, acc_f[o]);
    } else {
      SetInt(&out, o, acc_i[o]);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> EvaluateReductionOp(
    const Node& node, absl::Span<const Tensor* const> inputs, int64_t opset,
    int64_t max_elements) {
  const std::string& op = node.op_type;
  std::vector<Tensor> out;
  if (op == "ReduceProd" || op == "ReduceSum") {
    ASSIGN_OR_RETURN(Tensor t, ReduceOp(node, inputs, opset, max_elements));
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace constant_eval_internal
}  // namespace quantd
