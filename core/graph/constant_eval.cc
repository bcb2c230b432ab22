#include "core/graph/constant_eval.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

using Shape = std::vector<int64_t>;

bool IsFloating(DType t) { return t == DType::kFloat || t == DType::kDouble; }

bool IsNumeric(DType t) {
  switch (t) {
    case DType::kFloat:
    case DType::kDouble:
    case DType::kInt8:
    case DType::kUint8:
    case DType::kInt16:
    case DType::kUint16:
    case DType::kInt32:
    case DType::kUint32:
    case DType::kInt64:
    case DType::kUint64:
    case DType::kBool:
      return true;
    default:
      return false;
  }
}

// Reads element i of a numeric tensor as T.
template <typename T>
T Get(const Tensor& t, int64_t i) {
  const void* p = t.raw();
  switch (t.dtype()) {
    case DType::kFloat:
      return static_cast<T>(static_cast<const float*>(p)[i]);
    case DType::kDouble:
      return static_cast<T>(static_cast<const double*>(p)[i]);
    case DType::kInt8:
      return static_cast<T>(static_cast<const int8_t*>(p)[i]);
    case DType::kUint8:
    case DType::kBool:
      return static_cast<T>(static_cast<const uint8_t*>(p)[i]);
    case DType::kInt16:
      return static_cast<T>(static_cast<const int16_t*>(p)[i]);
    case DType::kUint16:
      return static_cast<T>(static_cast<const uint16_t*>(p)[i]);
    case DType::kInt32:
      return static_cast<T>(static_cast<const int32_t*>(p)[i]);
    case DType::kUint32:
      return static_cast<T>(static_cast<const uint32_t*>(p)[i]);
    case DType::kInt64:
      return static_cast<T>(static_cast<const int64_t*>(p)[i]);
    case DType::kUint64:
      return static_cast<T>(static_cast<const uint64_t*>(p)[i]);
    default:
      return T{};
  }
}

// Float -> integer conversion that never invokes UB (NaN/overflow saturate).
int64_t SafeToInt64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

// Writes element i of a numeric tensor from an int64 or double value.
void SetInt(Tensor* t, int64_t i, int64_t v) {
  void* p = t->mutable_raw();
  switch (t->dtype()) {
    case DType::kFloat:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case DType::kDouble:
      static_cast<double*>(p)[i] = static_cast<double>(v);
      break;
    case DType::kInt8:
      static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v);
      break;
    case DType::kUint8:
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
      break;
    case DType::kBool:
      static_cast<uint8_t*>(p)[i] = v != 0 ? 1 : 0;
      break;
    case DType::kInt16:
      static_cast<int16_t*>(p)[i] = static_cast<int16_t>(v);
      break;
    case DType::kUint16:
      static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v);
      break;
    case DType::kInt32:
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      break;
    case DType::kUint32:
      static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v);
      break;
    case DType::kInt64:
      static_cast<int64_t*>(p)[i] = v;
      break;
    case DType::kUint64:
      static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v);
      break;
    default:
      break;
  }
}

void SetDouble(Tensor* t, int64_t i, double v) {
  switch (t->dtype()) {
    case DType::kFloat:
      static_cast<float*>(t->mutable_raw())[i] = static_cast<float>(v);
      break;
    case DType::kDouble:
      static_cast<double*>(t->mutable_raw())[i] = v;
      break;
    case DType::kBool:
      static_cast<uint8_t*>(t->mutable_raw())[i] = v != 0 ? 1 : 0;
      break;
    default:
      SetInt(t, i, SafeToInt64(v));
  }
}

absl::Status NodeError(const Node& node, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(node.Label(), ": ", what));
}

absl::StatusOr<Tensor> NewTensor(const Node& node, DType dtype, Shape shape,
                                 int64_t max_elements) {
  const int64_t n = NumElements(shape);
  if (n < 0 || n > max_elements) {
    return absl::ResourceExhaustedError(
        absl::StrCat(node.Label(), ": constant output [",
                     absl::StrJoin(shape, ","), "] is too large to evaluate"));
  }
  return Tensor(dtype, std::move(shape));
}

absl::StatusOr<int64_t> NormalizeAxis(const Node& node, int64_t axis,
                                      int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return NodeError(
        node, absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> Strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    s[i] = s[i + 1] * shape[i + 1];
  }
  return s;
}

// Maps each output index to the flat index of a broadcast input.
class BroadcastMap {
 public:
  BroadcastMap(const Shape& out, const Shape& in) : out_(out) {
    const size_t r = out.size();
    strides_.assign(r, 0);
    const std::vector<int64_t> in_strides = Strides(in);
    const size_t off = r - in.size();
    for (size_t i = 0; i < in.size(); ++i) {
      strides_[off + i] = in[i] == 1 ? 0 : in_strides[i];
    }
  }
  int64_t Map(int64_t flat) const {
    int64_t idx = 0;
    for (int i = static_cast<int>(out_.size()) - 1; i >= 0; --i) {
      const int64_t d = out_[i];
      if (d == 0) return 0;
      idx += (flat % d) * strides_[i];
      flat /= d;
    }
    return idx;
  }

 private:
  Shape out_;
  std::vector<int64_t> strides_;
};

absl::StatusOr<std::vector<int64_t>> AxesFrom(
    const Node& node, absl::Span<const Tensor* const> in, size_t input_index,
    bool from_input) {
  if (from_input) {
    if (input_index < in.size() && in[input_index] != nullptr) {
      return ToInt64Vector(*in[input_index]);
    }
    return std::vector<int64_t>{};
  }
  return node.GetInts("axes");
}

// ---- data movement (byte-wise) ---------------------------------------------

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

// ---- arithmetic -------------------------------------------------------------

enum class Binary {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kMax,
  kMin,
  kEqual,
  kLess,
  kGreater,
  kLessEq,
  kGreaterEq,
  kAnd,
  kOr
};

bool IsComparison(Binary op) {
  return op == Binary::kEqual || op == Binary::kLess ||
         op == Binary::kGreater || op == Binary::kLessEq ||
         op == Binary::kGreaterEq || op == Binary::kAnd || op == Binary::kOr;
}

absl::StatusOr<Tensor> BinaryOp(const Node& node, Binary op, const Tensor& a,
                                const Tensor& b, int64_t max_elements) {
  if (a.dtype() != b.dtype()) {
    return NodeError(
        node, absl::StrCat("input types differ (", DTypeName(a.dtype()), " vs ",
                           DTypeName(b.dtype()), ")"));
  }
  ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(a.shape(), b.shape()));
  const DType out_type = IsComparison(op) ? DType::kBool : a.dtype();
  ASSIGN_OR_RETURN(Tensor out, NewTensor(node, out_type, shape, max_elements));
  BroadcastMap ma(shape, a.shape()), mb(shape, b.shape());
  const bool fp = IsFloating(a.dtype());
  const bool fmod = node.GetInt("fmod", 0) != 0;
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const int64_t ia = ma.Map(i), ib = mb.Map(i);
    if (fp) {
      const double x = Get<double>(a, ia), y = Get<double>(b, ib);
      double r = 0;
      switch (op) {
        case Binary::kAdd:
          r = x + y;
          break;
        case Binary::kSub:
          r = x - y;
          break;
        case Binary::kMul:
          r = x * y;
          break;
        case Binary::kDiv:
          r = x / y;
          break;
        case Binary::kMod:
          r = std::fmod(x, y);
          if (!fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
          break;
        case Binary::kMax:
          r = std::max(x, y);
          break;
        case Binary::kMin:
          r = std::min(x, y);
          break;
        case Binary::kEqual:
          r = x == y;
          break;
        case Binary::kLess:
          r = x < y;
          break;
        case Binary::kGreater:
          r = x > y;
          break;
        case Binary::kLessEq:
          r = x <= y;
          break;
        case Binary::kGreaterEq:
          r = x >= y;
          break;
        case Binary::kAnd:
          r = (x != 0) && (y != 0);
          break;
        case Binary::kOr:
          r = (x != 0) || (y != 0);
          break;
      }
      SetDouble(&out, i, r);
    } else {
      const int64_t x = Get<int64_t>(a, ia), y = Get<int64_t>(b, ib);
      int64_t r = 0;
      // Wrapping arithmetic through uint64 keeps overflow defined.
      const auto ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
      switch (op) {
        case Binary::kAdd:
          r = static_cast<int64_t>(ux + uy);
          break;
        case Binary::kSub:
          r = static_cast<int64_t>(ux - uy);
          break;
        case Binary::kMul:
          r = static_cast<int64_t>(ux * uy);
          break;
        case Binary::kDiv:
        case Binary::kMod:
          if (y == 0) return NodeError(node, "integer division by zero");
          if (y == -1) {
            r = op == Binary::kDiv ? static_cast<int64_t>(0 - ux) : 0;
          } else if (op == Binary::kDiv) {
            r = x / y;  // truncation, as C and ONNX Runtime
          } else {
            r = x % y;
            if (!fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
          }
          break;
        case Binary::kMax:
          r = std::max(x, y);
          break;
        case Binary::kMin:
          r = std::min(x, y);
          break;
        case Binary::kEqual:
          r = x == y;
          break;
        case Binary::kLess:
          r = x < y;
          break;
        case Binary::kGreater:
          r = x > y;
          break;
        case Binary::kLessEq:
          r = x <= y;
          break;
        case Binary::kGreaterEq:
          r = x >= y;
          break;
        case Binary::kAnd:
          r = (x != 0) && (y != 0);
          break;
        case Binary::kOr:
          r = (x != 0) || (y != 0);
          break;
      }
      SetInt(&out, i, r);
    }
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

absl::StatusOr<Tensor> UnaryOp(const Node& node, const Tensor& x) {
  const std::string& op = node.op_type;
  Tensor out(op == "Not" ? DType::kBool : x.dtype(), x.shape());
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (IsFloating(x.dtype())) {
      const double v = Get<double>(x, i);
      double r = v;
      if (op == "Neg") r = -v;
      if (op == "Abs") r = std::fabs(v);
      if (op == "Floor") r = std::floor(v);
      if (op == "Ceil") r = std::ceil(v);
      if (op == "Sqrt") r = std::sqrt(v);
      if (op == "Not") r = v == 0;
      SetDouble(&out, i, r);
    } else {
      const int64_t v = Get<int64_t>(x, i);
      int64_t r = v;
      if (op == "Neg") r = static_cast<int64_t>(0 - static_cast<uint64_t>(v));
      if (op == "Abs")
        r = v < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(v)) : v;
      if (op == "Sqrt") r = SafeToInt64(std::sqrt(static_cast<double>(v)));
      if (op == "Not") r = v == 0;
      SetInt(&out, i, r);
    }
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

absl::StatusOr<std::vector<int64_t>> ToInt64Vector(const Tensor& t) {
  switch (t.dtype()) {
    case DType::kInt8:
    case DType::kUint8:
    case DType::kInt16:
    case DType::kUint16:
    case DType::kInt32:
    case DType::kUint32:
    case DType::kInt64:
    case DType::kUint64:
    case DType::kBool:
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "expected an integer tensor, got ", DTypeName(t.dtype())));
  }
  std::vector<int64_t> v(t.num_elements());
  for (int64_t i = 0; i < t.num_elements(); ++i) v[i] = Get<int64_t>(t, i);
  return v;
}

absl::StatusOr<std::vector<int64_t>> BroadcastShapes(
    absl::Span<const int64_t> a, absl::Span<const int64_t> b) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (x == y) {
      out[i] = x;
    } else if (x == 1) {
      out[i] = y;
    } else if (y == 1) {
      out[i] = x;
    } else if (x == -1 || y == -1) {
      // Unknown vs known d > 1: the result must be d (or it is an error at
      // run time); unknown vs unknown stays unknown.
      out[i] = x == -1 ? y : x;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("shapes [", absl::StrJoin(a, ","), "] and [",
                       absl::StrJoin(b, ","), "] do not broadcast"));
    }
  }
  return out;
}

bool CanEvaluate(const Node& node) {
  static const auto* kOps =
      new absl::flat_hash_set<std::string>{"Shape",
                                           "Size",
                                           "Identity",
                                           "Dropout",
                                           "Cast",
                                           "Gather",
                                           "Unsqueeze",
                                           "Squeeze",
                                           "Concat",
                                           "Slice",
                                           "Reshape",
                                           "Flatten",
                                           "Transpose",
                                           "Expand",
                                           "Tile",
                                           "Range",
                                           "ConstantOfShape",
                                           "Add",
                                           "Sub",
                                           "Mul",
                                           "Div",
                                           "Mod",
                                           "Neg",
                                           "Abs",
                                           "Max",
                                           "Min",
                                           "Floor",
                                           "Ceil",
                                           "Sqrt",
                                           "Equal",
                                           "Less",
                                           "Greater",
                                           "LessOrEqual",
                                           "GreaterOrEqual",
                                           "Not",
                                           "And",
                                           "Or",
                                           "Where",
                                           "ReduceProd",
                                           "ReduceSum"};
  return (node.domain.empty() || node.domain == "ai.onnx") &&
         kOps->contains(node.op_type);
}

absl::StatusOr<std::vector<Tensor>> EvaluateNode(
    const Node& node, absl::Span<const Tensor* const> inputs, int64_t opset,
    int64_t max_elements) {
  const std::string& op = node.op_type;
  if (!CanEvaluate(node)) {
    return absl::UnimplementedError(
        absl::StrCat(node.Label(), ": not a constant-evaluable op"));
  }
  const bool needs_data = op != "Shape" && op != "Size";
  for (const Tensor* t : inputs) {
    if (t == nullptr) continue;
    if (needs_data && !IsNumeric(t->dtype())) {
      return absl::UnimplementedError(
          absl::StrCat(node.Label(), ": constant evaluation of ",
                       DTypeName(t->dtype()), " is not supported"));
    }
  }
  if (inputs.empty() && op != "ConstantOfShape") {
    return NodeError(node, "missing input");
  }
  auto input = [&](size_t k) -> const Tensor* {
    return k < inputs.size() ? inputs[k] : nullptr;
  };
  if (input(0) == nullptr && op != "ConstantOfShape") {
    return NodeError(node, "missing input 0");
  }
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
  } else if (op == "Range") {
    if (input(1) == nullptr || input(2) == nullptr) {
      return NodeError(node, "missing limit or delta");
    }
    const DType type = input(0)->dtype();
    double n;
    if (IsFloating(type)) {
      const double start = Get<double>(*input(0), 0),
                   limit = Get<double>(*input(1), 0),
                   delta = Get<double>(*input(2), 0);
      if (delta == 0) return NodeError(node, "delta is 0");
      n = std::max(std::ceil((limit - start) / delta), 0.0);
      if (!(n <= static_cast<double>(max_elements))) {
        return NewTensor(node, type, {-1}, 0).status();
      }
      ASSIGN_OR_RETURN(
          Tensor t,
          NewTensor(node, type, {static_cast<int64_t>(n)}, max_elements));
      for (int64_t i = 0; i < t.num_elements(); ++i) {
        SetDouble(&t, i, start + static_cast<double>(i) * delta);
      }
      out.push_back(std::move(t));
    } else {
      const int64_t start = Get<int64_t>(*input(0), 0),
                    limit = Get<int64_t>(*input(1), 0),
                    delta = Get<int64_t>(*input(2), 0);
      if (delta == 0) return NodeError(node, "delta is 0");
      n = std::max(
          std::ceil((static_cast<double>(limit) - static_cast<double>(start)) /
                    static_cast<double>(delta)),
          0.0);
      if (!(n <= static_cast<double>(max_elements))) {
        return absl::ResourceExhaustedError(
            absl::StrCat(node.Label(), ": range is too large to evaluate"));
      }
      ASSIGN_OR_RETURN(
          Tensor t,
          NewTensor(node, type, {static_cast<int64_t>(n)}, max_elements));
      for (int64_t i = 0; i < t.num_elements(); ++i) {
        // Wrapping arithmetic: defined even for absurd deltas.
        SetInt(&t, i,
               static_cast<int64_t>(static_cast<uint64_t>(start) +
                                    static_cast<uint64_t>(i) *
                                        static_cast<uint64_t>(delta)));
      }
      out.push_back(std::move(t));
    }
  } else if (op == "ConstantOfShape") {
    if (input(0) == nullptr) return NodeError(node, "missing shape");
    ASSIGN_OR_RETURN(std::vector<int64_t> shape, ToInt64Vector(*input(0)));
    for (int64_t d : shape) {
      if (d < 0) return NodeError(node, "negative dim in shape");
    }
    const Attribute* value = node.FindAttribute("value");
    DType type = DType::kFloat;
    if (value != nullptr && value->type == Attribute::Type::kTensor) {
      if (value->t.num_elements() != 1 || !IsNumeric(value->t.dtype())) {
        return NodeError(node, "value must be a one-element numeric tensor");
      }
      type = value->t.dtype();
    }
    ASSIGN_OR_RETURN(Tensor t, NewTensor(node, type, shape, max_elements));
    if (value != nullptr && value->type == Attribute::Type::kTensor) {
      const size_t esize = DTypeSize(type);
      auto* dst = static_cast<char*>(t.mutable_raw());
      for (int64_t i = 0; i < t.num_elements(); ++i) {
        std::memcpy(dst + i * esize, value->t.raw(), esize);
      }
    }
    out.push_back(std::move(t));
  } else if (op == "Where") {
    if (input(1) == nullptr || input(2) == nullptr) {
      return NodeError(node, "missing X or Y");
    }
    ASSIGN_OR_RETURN(
        Tensor t, WhereOp(node, *input(0), *input(1), *input(2), max_elements));
    out.push_back(std::move(t));
  } else if (op == "Neg" || op == "Abs" || op == "Floor" || op == "Ceil" ||
             op == "Sqrt" || op == "Not") {
    ASSIGN_OR_RETURN(Tensor t, UnaryOp(node, *input(0)));
    out.push_back(std::move(t));
  } else if (op == "ReduceProd" || op == "ReduceSum") {
    ASSIGN_OR_RETURN(Tensor t, ReduceOp(node, inputs, opset, max_elements));
    out.push_back(std::move(t));
  } else {
    static const auto* kBinary = new std::map<std::string, Binary>{
        {"Add", Binary::kAdd},
        {"Sub", Binary::kSub},
        {"Mul", Binary::kMul},
        {"Div", Binary::kDiv},
        {"Mod", Binary::kMod},
        {"Max", Binary::kMax},
        {"Min", Binary::kMin},
        {"Equal", Binary::kEqual},
        {"Less", Binary::kLess},
        {"Greater", Binary::kGreater},
        {"LessOrEqual", Binary::kLessEq},
        {"GreaterOrEqual", Binary::kGreaterEq},
        {"And", Binary::kAnd},
        {"Or", Binary::kOr}};
    const Binary bop = kBinary->at(op);
    Tensor acc = *input(0);
    const bool variadic = op == "Max" || op == "Min";
    const size_t last = variadic ? inputs.size() : 2;
    if (!variadic && input(1) == nullptr) return NodeError(node, "missing B");
    for (size_t k = 1; k < last; ++k) {
      if (input(k) == nullptr) continue;
      ASSIGN_OR_RETURN(acc, BinaryOp(node, bop, acc, *input(k), max_elements));
    }
    out.push_back(std::move(acc));
  }
  return out;
}

}  // namespace quantd
