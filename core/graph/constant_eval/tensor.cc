// Constant evaluation of ONNX tensor ops (onnx/defs/tensor): data movement,
// byte-wise where the op allows it, and casts.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "core/graph/constant_eval.h"
#include "core/graph/constant_eval/families.h"
#include "core/graph/constant_eval/helpers.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace constant_eval_internal {
namespace {

absl::StatusOr<Tensor> GatherOp(const Node& node, const Tensor& data,
                                const Tensor& indices, int64_t max_elements) {
  ASSIGN_OR_RETURN(int64_t axis,
                   NormalizeAxis(node, node.GetInt("axis", 0), data.rank()));
  ASSIGN_OR_RETURN(std::vector<int64_t> idx, ToInt64Vector(indices));
  Shape out_shape(data.shape().begin(), data.shape().begin() + axis);
  out_shape.insert(out_shape.end(), indices.shape().begin(),
                   indices.shape().end());
  out_shape.insert(out_shape.end(), data.shape().begin() + axis + 1,
                   data.shape().end());
  ASSIGN_OR_RETURN(Tensor out,
                   NewTensor(node, data.dtype(), out_shape, max_elements));
  const int64_t dim = data.dim(axis);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= data.dim(i);
  for (int64_t i = axis + 1; i < data.rank(); ++i) inner *= data.dim(i);
  const size_t esize = DTypeSize(data.dtype());
  const auto* src = static_cast<const char*>(data.raw());
  auto* dst = static_cast<char*>(out.mutable_raw());
  for (int64_t& k : idx) {
    if (k < -dim || k >= dim) {
      return NodeError(node, absl::StrCat("index ", k,
                                          " is out of range for "
                                          "axis of size ",
                                          dim));
    }
    if (k < 0) k += dim;
  }
  int64_t o = 0;
  for (int64_t a = 0; a < outer; ++a) {
    for (int64_t k : idx) {
      std::memcpy(dst + o * esize, src + ((a * dim + k) * inner) * esize,
                  inner * esize);
      o += inner;
    }
  }
  return out;
}

absl::StatusOr<Tensor> ConcatOp(const Node& node,
                                absl::Span<const Tensor* const> in,
                                int64_t max_elements) {
  std::vector<const Tensor*> parts;
  for (const Tensor* t : in) {
    if (t != nullptr) parts.push_back(t);
  }
  if (parts.empty()) return NodeError(node, "no inputs");
  const int64_t rank = parts[0]->rank();
  ASSIGN_OR_RETURN(int64_t axis,
                   NormalizeAxis(node, node.GetInt("axis", 0), rank));
  Shape out_shape = parts[0]->shape();
  out_shape[axis] = 0;
  for (const Tensor* t : parts) {
    if (t->rank() != rank || t->dtype() != parts[0]->dtype()) {
      return NodeError(node, "inputs differ in rank or type");
    }
    for (int64_t i = 0; i < rank; ++i) {
      if (i != axis && t->dim(i) != parts[0]->dim(i)) {
        return NodeError(node, absl::StrCat("inputs differ in dim ", i));
      }
    }
    out_shape[axis] += t->dim(axis);
  }
  ASSIGN_OR_RETURN(Tensor out,
                   NewTensor(node, parts[0]->dtype(), out_shape, max_elements));
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= out_shape[i];
  const size_t esize = DTypeSize(out.dtype());
  auto* dst = static_cast<char*>(out.mutable_raw());
  for (int64_t a = 0; a < outer; ++a) {
    for (const Tensor* t : parts) {
      const int64_t chunk = t->num_elements() / std::max<int64_t>(outer, 1);
      std::memcpy(dst, static_cast<const char*>(t->raw()) + a * chunk * esize,
                  chunk * esize);
      dst += chunk * esize;
    }
  }
  return out;
}

absl::StatusOr<Tensor> SliceOp(const Node& node,
                               absl::Span<const Tensor* const> in,
                               int64_t opset, int64_t max_elements) {
  const Tensor& data = *in[0];
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset < 10) {
    starts = node.GetInts("starts");
    ends = node.GetInts("ends");
    axes = node.GetInts("axes");
  } else {
    if (in.size() < 3 || in[1] == nullptr || in[2] == nullptr) {
      return NodeError(node, "starts and ends are required");
    }
    ASSIGN_OR_RETURN(starts, ToInt64Vector(*in[1]));
    ASSIGN_OR_RETURN(ends, ToInt64Vector(*in[2]));
    if (in.size() > 3 && in[3] != nullptr) {
      ASSIGN_OR_RETURN(axes, ToInt64Vector(*in[3]));
    }
    if (in.size() > 4 && in[4] != nullptr) {
      ASSIGN_OR_RETURN(steps, ToInt64Vector(*in[4]));
    }
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(i);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return NodeError(node, "starts, ends, axes and steps differ in length");
  }
  const int64_t rank = data.rank();
  std::vector<int64_t> start(rank, 0), step(rank, 1), count(data.shape());
  for (size_t k = 0; k < axes.size(); ++k) {
    ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, axes[k], rank));
    const int64_t dim = data.dim(axis);
    const int64_t s = steps[k];
    if (s == 0) return NodeError(node, "slice step is 0");
    // 128-bit: starts/ends/steps are arbitrary int64 values (INT64_MAX and
    // INT64_MIN are common sentinels).
    __int128 b = starts[k], e = ends[k];
    if (b < 0) b = b < -dim ? 0 : b + dim;
    if (e < 0) e = e < -dim ? (s > 0 ? 0 : -1) : e + dim;
    if (s > 0) {
      b = std::clamp<__int128>(b, 0, dim);
      e = std::clamp<__int128>(e, 0, dim);
      count[axis] = static_cast<int64_t>(e > b ? (e - b - 1) / s + 1 : 0);
    } else {
      b = std::clamp<__int128>(b, 0, static_cast<__int128>(dim) - 1);
      e = std::clamp<__int128>(e, -1, static_cast<__int128>(dim) - 1);
      count[axis] = static_cast<int64_t>(
          b > e ? (b - e - 1) / (-static_cast<__int128>(s)) + 1 : 0);
    }
    start[axis] = static_cast<int64_t>(b);
    step[axis] = s;
  }
  ASSIGN_OR_RETURN(Tensor out,
                   NewTensor(node, data.dtype(), count, max_elements));
  const size_t esize = DTypeSize(data.dtype());
  const std::vector<int64_t> strides = Strides(data.shape());
  const auto* src = static_cast<const char*>(data.raw());
  auto* dst = static_cast<char*>(out.mutable_raw());
  for (int64_t o = 0; o < out.num_elements(); ++o) {
    int64_t rem = o, off = 0;
    for (int64_t i = rank - 1; i >= 0; --i) {
      const int64_t c = rem % count[i];
      rem /= count[i];
      off += (start[i] + c * step[i]) * strides[i];
    }
    std::memcpy(dst + o * esize, src + off * esize, esize);
  }
  return out;
}

absl::StatusOr<Tensor> TransposeOp(const Node& node, const Tensor& data,
                                   int64_t max_elements) {
  const int64_t rank = data.rank();
  std::vector<int64_t> perm = node.GetInts("perm");
  if (perm.empty()) {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  if (static_cast<int64_t>(perm.size()) != rank) {
    return NodeError(node, "perm length differs from the input rank");
  }
  Shape out_shape(rank);
  for (int64_t i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= rank) return NodeError(node, "bad perm");
    out_shape[i] = data.dim(perm[i]);
  }
  ASSIGN_OR_RETURN(Tensor out,
                   NewTensor(node, data.dtype(), out_shape, max_elements));
  const std::vector<int64_t> in_strides = Strides(data.shape());
  const size_t esize = DTypeSize(data.dtype());
  const auto* src = static_cast<const char*>(data.raw());
  auto* dst = static_cast<char*>(out.mutable_raw());
  for (int64_t o = 0; o < out.num_elements(); ++o) {
    int64_t rem = o, off = 0;
    for (int64_t i = rank - 1; i >= 0; --i) {
      const int64_t c = rem % out_shape[i];
      rem /= out_shape[i];
      off += c * in_strides[perm[i]];
    }
    std::memcpy(dst + o * esize, src + off * esize, esize);
  }
  return out;
}

absl::StatusOr<Tensor> BroadcastTo(const Node& node, const Tensor& data,
                                   const Shape& shape, int64_t max_elements) {
  ASSIGN_OR_RETURN(Tensor out,
                   NewTensor(node, data.dtype(), shape, max_elements));
  BroadcastMap map(shape, data.shape());
  const size_t esize = DTypeSize(data.dtype());
  const auto* src = static_cast<const char*>(data.raw());
  auto* dst = static_cast<char*>(out.mutable_raw());
  for (int64_t o = 0; o < out.num_elements(); ++o) {
    std::memcpy(dst + o * esize, src + map.Map(o) * esize, esize);
  }
  return out;
}

absl::StatusOr<Tensor> TileOp(const Node& node, const Tensor& data,
                              const Tensor& repeats_t, int64_t max_elements) {
  ASSIGN_OR_RETURN(std::vector<int64_t> repeats, ToInt64Vector(repeats_t));
  if (static_cast<int64_t>(repeats.size()) != data.rank()) {
    return NodeError(node, "repeats length differs from the input rank");
  }
  Shape out_shape(data.rank());
  for (int64_t i = 0; i < data.rank(); ++i) {
    if (repeats[i] < 0 || repeats[i] > max_elements) {
      return NodeError(node, "repeat out of range");
    }
    // Both factors are <= 2^31-ish bounded values: data dims come from an
    // existing tensor and repeats from the check above.
    const __int128 d = static_cast<__int128>(data.dim(i)) * repeats[i];
    if (d > max_elements) {
      return absl::ResourceExhaustedError(
          absl::StrCat(node.Label(), ": tiled output is too large"));
    }
    out_shape[i] = static_cast<int64_t>(d);
  }
  ASSIGN_OR_RETURN(Tensor out,
                   NewTensor(node, data.dtype(), out_shape, max_elements));
  const std::vector<int64_t> in_strides = Strides(data.shape());
  const size_t esize = DTypeSize(data.dtype());
  const auto* src = static_cast<const char*>(data.raw());
  auto* dst = static_cast<char*>(out.mutable_raw());
  for (int64_t o = 0; o < out.num_elements(); ++o) {
    int64_t rem = o, off = 0;
    for (int64_t i = data.rank() - 1; i >= 0; --i) {
      const int64_t c = rem % out_shape[i];
      rem /= out_shape[i];
      off += (c % data.dim(i)) * in_strides[i];
    }
    std::memcpy(dst + o * esize, src + off * esize, esize);
  }
  return out;
}

absl::StatusOr<Tensor> WhereOp(const Node& node, const Tensor& c,
                               const Tensor& x, const Tensor& y,
                               int64_t max_elements) {
  if (x.dtype() != y.dtype()) return NodeError(node, "X and Y types differ");
  ASSIGN_OR_RETURN(Shape s1, BroadcastShapes(c.shape(), x.shape()));
  ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(s1, y.shape()));
  ASSIGN_OR_RETURN(Tensor out, NewTensor(node, x.dtype(), shape, max_elements));
  BroadcastMap mc(shape, c.shape()), mx(shape, x.shape()), my(shape, y.shape());
  const size_t esize = DTypeSize(x.dtype());
  auto* dst = static_cast<char*>(out.mutable_raw());
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const bool take_x = Get<int64_t>(c, mc.Map(i)) != 0;
    const Tensor& src = take_x ? x : y;
    const int64_t j = take_x ? mx.Map(i) : my.Map(i);
    std::memcpy(dst + i * esize,
                static_cast<const char*>(src.raw()) + j * esize, esize);
  }
  return out;
}

absl::StatusOr<Tensor> CastOp(const Node& node, const Tensor& x,
                              int64_t max_elements) {
  const int64_t to = node.GetInt("to", 0);
  const DType dtype = static_cast<DType>(to);
  if (!IsNumeric(dtype)) {
    return absl::UnimplementedError(
        absl::StrCat(node.Label(), ": constant cast to ", DTypeName(dtype),
                     " is not supported"));
  }
  ASSIGN_OR_RETURN(Tensor out, NewTensor(node, dtype, x.shape(), max_elements));
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (IsFloating(x.dtype())) {
      SetDouble(&out, i, Get<double>(x, i));
    } else if (IsFloating(dtype)) {
      SetDouble(&out, i, static_cast<double>(Get<int64_t>(x, i)));
    } else {
      SetInt(&out, i, Get<int64_t>(x, i));
    }
  }
  return out;
}

absl::StatusOr<Shape> ReshapeTarget(const Node& node, const Shape& in,
                                    const std::vector<int64_t>& target) {
  const bool allow_zero = node.GetInt("allowzero", 0) != 0;
  Shape out(target.size());
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allow_zero) {
      if (i >= in.size()) {
        return NodeError(
            node,
            absl::StrCat("shape[", i, "] = 0 copies a missing input dim"));
      }
      d = in[i];
    }
    if (d == -1) {
      if (infer >= 0) return NodeError(node, "more than one -1 in shape");
      infer = static_cast<int>(i);
      out[i] = -1;
      continue;
    }
    if (d < 0) return NodeError(node, absl::StrCat("invalid dim ", d));
    out[i] = d;
    if (d >= 0 && known >= 0) {
      known = (d != 0 && known > std::numeric_limits<int64_t>::max() / d)
                  ? -1
                  : known * d;
    }
  }
  const int64_t total = NumElements(in);
  if (infer >= 0) {
    if (total < 0) {
      out[infer] = -1;
    } else if (known <= 0 || total % known != 0) {
      return NodeError(node,
                       absl::StrCat("cannot reshape [", absl::StrJoin(in, ","),
                                    "] to [", absl::StrJoin(target, ","), "]"));
    } else {
      out[infer] = total / known;
    }
  } else if (total >= 0 && known != total) {
    return NodeError(
        node, absl::StrCat("cannot reshape [", absl::StrJoin(in, ","), "] to [",
                           absl::StrJoin(target, ","), "]"));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> EvaluateTensorOp(
    const Node& node, absl::Span<const Tensor* const> inputs, int64_t opset,
    int64_t max_elements) {
  const std::string& op = node.op_type;
  const InputAt input{inputs};
  std::vector<Tensor> out;
  if (op == "Shape") {
    const int64_t rank = input(0)->rank();
    int64_t start = node.GetInt("start", 0), end = node.GetInt("end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
    std::vector<int64_t> dims(input(0)->shape().begin() + start,
                              input(0)->shape().begin() + std::max(start, end));
    out.push_back(
        Tensor::FromVector<int64_t>(dims, {static_cast<int64_t>(dims.size())}));
  } else if (op == "Size") {
    out.push_back(Tensor::FromVector<int64_t>({input(0)->num_elements()}, {}));
  } else if (op == "Identity" || op == "Dropout") {
    out.push_back(*input(0));
    if (op == "Dropout" && node.outputs.size() > 1) {
      Tensor mask(DType::kBool, input(0)->shape());
      std::memset(mask.mutable_raw(), 1, mask.byte_size());
      out.push_back(std::move(mask));
    }
  } else if (op == "Cast") {
    ASSIGN_OR_RETURN(Tensor t, CastOp(node, *input(0), max_elements));
    out.push_back(std::move(t));
  } else if (op == "Gather") {
    if (input(1) == nullptr) return NodeError(node, "missing indices");
    ASSIGN_OR_RETURN(Tensor t,
                     GatherOp(node, *input(0), *input(1), max_elements));
    out.push_back(std::move(t));
  } else if (op == "Unsqueeze" || op == "Squeeze") {
    ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                     AxesFrom(node, inputs, 1, opset >= 13));
    const Tensor& x = *input(0);
    Shape shape;
    if (op == "Unsqueeze") {
      const int64_t rank = x.rank() + static_cast<int64_t>(axes.size());
      std::vector<bool> inserted(rank, false);
      for (int64_t a : axes) {
        ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, a, rank));
        if (inserted[axis]) return NodeError(node, "repeated axis");
        inserted[axis] = true;
      }
      int64_t k = 0;
      for (int64_t i = 0; i < rank; ++i) {
        shape.push_back(inserted[i] ? 1 : x.dim(k++));
      }
    } else {
      std::vector<bool> drop(x.rank(), false);
      for (int64_t a : axes) {
        ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, a, x.rank()));
        if (x.dim(axis) != 1) {
          return NodeError(node, absl::StrCat("cannot squeeze axis ", axis,
                                              " of size ", x.dim(axis)));
        }
        drop[axis] = true;
      }
      for (int64_t i = 0; i < x.rank(); ++i) {
        if (axes.empty() ? x.dim(i) != 1 : !drop[i]) shape.push_back(x.dim(i));
      }
    }
    ASSIGN_OR_RETURN(Tensor t, x.Reshaped(shape));
    out.push_back(std::move(t));
  } else if (op == "Concat") {
    ASSIGN_OR_RETURN(Tensor t, ConcatOp(node, inputs, max_elements));
    out.push_back(std::move(t));
  } else if (op == "Slice") {
    ASSIGN_OR_RETURN(Tensor t, SliceOp(node, inputs, opset, max_elements));
    out.push_back(std::move(t));
  } else if (op == "Reshape") {
    if (input(1) == nullptr) return NodeError(node, "missing shape");
    ASSIGN_OR_RETURN(std::vector<int64_t> target, ToInt64Vector(*input(1)));
    ASSIGN_OR_RETURN(Shape shape,
                     ReshapeTarget(node, input(0)->shape(), target));
    ASSIGN_OR_RETURN(Tensor t, input(0)->Reshaped(shape));
    out.push_back(std::move(t));
  } else if (op == "Flatten") {
    const Tensor& x = *input(0);
    int64_t axis = node.GetInt("axis", 1);
    if (axis < 0) axis += x.rank();
    if (axis < 0 || axis > x.rank()) return NodeError(node, "bad axis");
    int64_t a = 1;
    for (int64_t i = 0; i < axis; ++i) a *= x.dim(i);
    ASSIGN_OR_RETURN(Tensor t,
                     x.Reshaped({a, a == 0 ? 0 : x.num_elements() / a}));
    out.push_back(std::move(t));
  } else if (op == "Transpose") {
    ASSIGN_OR_RETURN(Tensor t, TransposeOp(node, *input(0), max_elements));
    out.push_back(std::move(t));
  } else if (op == "Expand") {
    if (input(1) == nullptr) return NodeError(node, "missing shape");
    ASSIGN_OR_RETURN(std::vector<int64_t> target, ToInt64Vector(*input(1)));
    for (int64_t d : target) {
      if (d < 0) return NodeError(node, "negative dim in shape");
    }
    ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(input(0)->shape(), target));
    ASSIGN_OR_RETURN(Tensor t,
                     BroadcastTo(node, *input(0), shape, max_elements));
    out.push_back(std::move(t));
  } else if (op == "Tile") {
    if (input(1) == nullptr) return NodeError(node, "missing repeats");
    ASSIGN_OR_RETURN(Tensor t,
                     TileOp(node, *input(0), *input(1), max_elements));
    out.push_back(std::move(t));
  } else if (op == "Where") {
    if (input(1) == nullptr || input(2) == nullptr) {
      return NodeError(node, "missing X or Y");
    }
    ASSIGN_OR_RETURN(
        Tensor t, WhereOp(node, *input(0), *input(1), *input(2), max_elements));
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace constant_eval_internal
}  // namespace quantd
