// Shape rules, one small function per op family. Unknown dims are -1; a
// rule that cannot tell the rank leaves has_shape false.
#include "core/graph/internal/shape_rules.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/constant_eval.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace shape_internal {
namespace {

using Shape = std::vector<int64_t>;

absl::Status Error(const RuleContext& c, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(c.node->Label(), ": ", what));
}

std::string Str(const Shape& s) {
  return absl::StrCat("[", absl::StrJoin(s, ","), "]");
}

const ValueInfo* In(const RuleContext& c, size_t k) {
  return k < c.inputs.size() ? c.inputs[k] : nullptr;
}
bool HasRank(const RuleContext& c, size_t k) {
  const ValueInfo* v = In(c, k);
  return v != nullptr && v->has_shape;
}
DType TypeOf(const RuleContext& c, size_t k) {
  const ValueInfo* v = In(c, k);
  return v == nullptr ? DType::kUndefined : v->dtype;
}
const Tensor* Const(const RuleContext& c, size_t k) {
  return k < c.constants.size() ? c.constants[k] : nullptr;
}
bool Present(const RuleContext& c, size_t k) {
  return !c.node->Input(k).empty();
}

void Set(RuleContext* c, size_t i, DType dtype, Shape shape) {
  if (i >= c->outputs.size()) return;
  c->outputs[i].dtype = dtype;
  c->outputs[i].shape = std::move(shape);
  c->outputs[i].has_shape = true;
}
void SetType(RuleContext* c, size_t i, DType dtype) {
  if (i >= c->outputs.size()) return;
  c->outputs[i].dtype = dtype;
  c->outputs[i].has_shape = false;
  c->outputs[i].shape.clear();
}
// Output i gets input k's type and shape (or only its type).
void Same(RuleContext* c, size_t i, size_t k, DType dtype) {
  if (HasRank(*c, k)) {
    Set(c, i, dtype, c->inputs[k]->shape);
  } else {
    SetType(c, i, dtype);
  }
}

absl::StatusOr<int64_t> Axis(const RuleContext& c, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return Error(
        c, absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::vector<int64_t>> ConstInts(const RuleContext& c, size_t k) {
  const Tensor* t = Const(c, k);
  if (t == nullptr) return absl::NotFoundError("not constant");
  auto v = ToInt64Vector(*t);
  if (!v.ok())
    return Error(c, absl::StrCat("input ", k, ": ", v.status().message()));
  return v;
}

// Dims and attributes come from untrusted models: arithmetic on them runs in
// 128 bits and results must stay below kMaxDim (2^40, far above any real
// tensor), so no int64 overflow can happen.
using i128 = __int128;
constexpr int64_t kMaxDim = int64_t{1} << 40;

absl::StatusOr<int64_t> Dim(const RuleContext& c, i128 v) {
  if (v < 0) return Error(c, "computed a negative dimension");
  if (v > kMaxDim) {
    return Error(c, absl::StrCat("computed dimension exceeds 2^40 (",
                                 static_cast<double>(v), ")"));
  }
  return static_cast<int64_t>(v);
}

// Ceil/floor division for the possibly-negative numerators of conv math.
i128 FloorDiv(i128 a, i128 b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
i128 CeilDiv(i128 a, i128 b) { return -FloorDiv(-a, b); }

// ---- element-wise ----------------------------------------------------------

absl::Status UnaryRule(RuleContext* c) {
  Same(c, 0, 0, TypeOf(*c, 0));
  return absl::OkStatus();
}

absl::Status BoolUnaryRule(RuleContext* c) {
  Same(c, 0, 0, DType::kBool);
  return absl::OkStatus();
}

absl::Status BroadcastAll(RuleContext* c, size_t first, size_t last,
                          DType dtype, bool check_types) {
  Shape shape;
  bool known = true;
  bool any = false;
  DType common = DType::kUndefined;
  for (size_t k = first; k < last; ++k) {
    if (!Present(*c, k)) continue;
    if (check_types) {
      const DType t = TypeOf(*c, k);
      if (common != DType::kUndefined && t != DType::kUndefined &&
          t != common) {
        return Error(*c, absl::StrCat("input types differ (", DTypeName(common),
                                      " vs ", DTypeName(t), ")"));
      }
      if (t != DType::kUndefined) common = t;
    }
    if (!HasRank(*c, k)) {
      known = false;
      continue;
    }
    if (!any) {
      shape = c->inputs[k]->shape;
      any = true;
      continue;
    }
    auto b = BroadcastShapes(shape, c->inputs[k]->shape);
    if (!b.ok()) return Error(*c, std::string(b.status().message()));
    shape = *std::move(b);
  }
  if (known && any) {
    Set(c, 0, dtype, shape);
  } else {
    SetType(c, 0, dtype);
  }
  return absl::OkStatus();
}

absl::Status ArithmeticRule(RuleContext* c) {
  return BroadcastAll(c, 0, c->inputs.size(), TypeOf(*c, 0), true);
}
absl::Status PowRule(RuleContext* c) {
  return BroadcastAll(c, 0, 2, TypeOf(*c, 0), false);
}
absl::Status CompareRule(RuleContext* c) {
  return BroadcastAll(c, 0, c->inputs.size(), DType::kBool, true);
}
absl::Status WhereRule(RuleContext* c) {
  return BroadcastAll(c, 0, 3, TypeOf(*c, 1), false);
}

absl::Status CastRule(RuleContext* c) {
  Same(c, 0, 0, static_cast<DType>(c->node->GetInt("to", 0)));
  return absl::OkStatus();
}
absl::Status CastLikeRule(RuleContext* c) {
  Same(c, 0, 0, TypeOf(*c, 1));
  return absl::OkStatus();
}

absl::Status DropoutRule(RuleContext* c) {
  Same(c, 0, 0, TypeOf(*c, 0));
  Same(c, 1, 0, DType::kBool);
  return absl::OkStatus();
}

absl::Status BatchNormRule(RuleContext* c) {
  if (HasRank(*c, 0) && HasRank(*c, 1) && In(*c, 0)->shape.size() >= 2) {
    const int64_t ch = In(*c, 0)->shape[1];
    for (size_t k = 1; k < 5 && k < c->inputs.size(); ++k) {
      if (!HasRank(*c, k)) continue;
      const Shape& s = In(*c, k)->shape;
      if (s.size() != 1 || (ch >= 0 && s[0] >= 0 && s[0] != ch)) {
        return Error(*c, absl::StrCat("input ", k, " has shape ", Str(s),
                                      ", expected [", ch, "]"));
      }
    }
  }
  Same(c, 0, 0, TypeOf(*c, 0));
  for (size_t i = 1; i < c->outputs.size(); ++i) Same(c, i, 3, TypeOf(*c, 3));
  return absl::OkStatus();
}

absl::Status LayerNormRule(RuleContext* c) {
  Same(c, 0, 0, TypeOf(*c, 0));
  if (c->outputs.size() > 1 && HasRank(*c, 0)) {
    Shape s = In(*c, 0)->shape;
    ASSIGN_OR_RETURN(int64_t axis, Axis(*c, c->node->GetInt("axis", -1),
                                        static_cast<int64_t>(s.size())));
    for (size_t i = axis; i < s.size(); ++i) s[i] = 1;
    const DType stash = static_cast<DType>(c->node->GetInt("stash_type", 1));
    for (size_t i = 1; i < c->outputs.size(); ++i) Set(c, i, stash, s);
  }
  return absl::OkStatus();
}

absl::Status QuantizeRule(RuleContext* c) {
  DType t = DType::kUint8;
  if (Present(*c, 2) && TypeOf(*c, 2) != DType::kUndefined) {
    t = TypeOf(*c, 2);
  } else if (c->node->GetInt("output_dtype", 0) != 0) {
    t = static_cast<DType>(c->node->GetInt("output_dtype", 0));
  }
  Same(c, 0, 0, t);
  return absl::OkStatus();
}

absl::Status DequantizeRule(RuleContext* c) {
  const DType scale = TypeOf(*c, 1);
  Same(c, 0, 0, scale == DType::kUndefined ? DType::kFloat : scale);
  return absl::OkStatus();
}

absl::Status DynamicQuantizeRule(RuleContext* c) {
  Same(c, 0, 0, DType::kUint8);
  Set(c, 1, DType::kFloat, {});
  Set(c, 2, DType::kUint8, {});
  return absl::OkStatus();
}

// ---- convolution and pooling ----------------------------------------------

struct WindowSpec {
  Shape kernel, strides, dilations, pads;
  std::string auto_pad;
};

absl::StatusOr<WindowSpec> Window(const RuleContext& c, size_t spatial,
                                  const Shape& kernel_default) {
  WindowSpec w;
  const Node& n = *c.node;
  w.kernel = n.GetInts("kernel_shape", kernel_default);
  w.strides = n.GetInts("strides", Shape(spatial, 1));
  w.dilations = n.GetInts("dilations", Shape(spatial, 1));
  w.pads = n.GetInts("pads", Shape(2 * spatial, 0));
  w.auto_pad = n.GetString("auto_pad", "NOTSET");
  if (w.kernel.size() != spatial || w.strides.size() != spatial ||
      w.dilations.size() != spatial || w.pads.size() != 2 * spatial) {
    return Error(c, absl::StrCat("kernel_shape/strides/dilations/pads do not "
                                 "match ",
                                 spatial, " spatial dims"));
  }
  for (size_t i = 0; i < spatial; ++i) {
    if (w.strides[i] <= 0 || w.dilations[i] <= 0 || w.kernel[i] < -1 ||
        w.strides[i] > kMaxDim || w.dilations[i] > kMaxDim ||
        w.kernel[i] > kMaxDim) {
      return Error(c, "strides, dilations and kernel_shape must be positive");
    }
  }
  for (int64_t p : w.pads) {
    if (p < -kMaxDim || p > kMaxDim) return Error(c, "pads out of range");
  }
  return w;
}

// Output spatial size of a conv/pool window.
absl::StatusOr<int64_t> WindowOut(const RuleContext& c, const WindowSpec& w,
                                  size_t i, int64_t in, bool ceil_mode) {
  if (in < 0) return -1;
  const i128 eff = (i128{w.kernel[i]} - 1) * w.dilations[i] + 1;
  const i128 s = w.strides[i];
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") {
    return Dim(c, CeilDiv(in, s));
  }
  if (w.auto_pad == "VALID") {
    const i128 o = CeilDiv(in - eff + 1, s);
    if (o < 0) return Error(c, "kernel larger than the input");
    return Dim(c, o);
  }
  const i128 padded = i128{in} + w.pads[i] + w.pads[i + w.kernel.size()];
  if (padded < eff) {
    return Error(c, absl::StrCat("kernel extent ", static_cast<int64_t>(eff),
                                 " exceeds the padded input ",
                                 static_cast<int64_t>(padded)));
  }
  i128 o =
      ceil_mode ? CeilDiv(padded - eff, s) + 1 : FloorDiv(padded - eff, s) + 1;
  // A window that would start inside the end padding is dropped.
  if (ceil_mode && (o - 1) * s >= i128{in} + w.pads[i]) --o;
  return Dim(c, o);
}

absl::Status ConvLike(RuleContext* c, size_t x_index, size_t w_index,
                      DType dtype) {
  if (!HasRank(*c, x_index)) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  const Shape& x = In(*c, x_index)->shape;
  if (x.size() < 3) {
    return Error(*c, absl::StrCat("input has shape ", Str(x),
                                  ", expected at least 3 dims"));
  }
  const size_t spatial = x.size() - 2;
  const int64_t group = c->node->GetInt("group", 1);
  Shape kernel_default(spatial, -1);
  int64_t out_ch = -1;
  if (HasRank(*c, w_index)) {
    const Shape& w = In(*c, w_index)->shape;
    if (w.size() != x.size()) {
      return Error(*c, absl::StrCat("weight has ", w.size(), " dims, expected ",
                                    x.size()));
    }
    out_ch = w[0];
    if (group <= 0 || group > kMaxDim) {
      return Error(*c, "group must be positive");
    }
    if (x[1] >= 0 && w[1] >= 0 && i128{x[1]} != i128{w[1]} * group) {
      return Error(*c, absl::StrCat("input has ", x[1], " channels but weight ",
                                    Str(w), " with group ", group, " expects ",
                                    static_cast<double>(i128{w[1]} * group)));
    }
    kernel_default.assign(w.begin() + 2, w.end());
  }
  ASSIGN_OR_RETURN(WindowSpec win, Window(*c, spatial, kernel_default));
  Shape out = {x[0], out_ch};
  for (size_t i = 0; i < spatial; ++i) {
    if (win.kernel[i] < 0) {
      out.push_back(-1);
      continue;
    }
    ASSIGN_OR_RETURN(int64_t o, WindowOut(*c, win, i, x[2 + i], false));
    out.push_back(o);
  }
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::Status ConvRule(RuleContext* c) {
  return ConvLike(c, 0, 1, TypeOf(*c, 0));
}
absl::Status ConvIntegerRule(RuleContext* c) {
  return ConvLike(c, 0, 1, DType::kInt32);
}
absl::Status QLinearConvRule(RuleContext* c) {
  return ConvLike(c, 0, 3, TypeOf(*c, 7));
}

absl::Status ConvTransposeRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (!HasRank(*c, 0)) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  const Shape& x = In(*c, 0)->shape;
  if (x.size() < 3) return Error(*c, "input needs at least 3 dims");
  const size_t spatial = x.size() - 2;
  const int64_t group = c->node->GetInt("group", 1);
  if (group <= 0 || group > kMaxDim) {
    return Error(*c, "group must be positive");
  }
  Shape kernel_default(spatial, -1);
  int64_t out_ch = -1;
  if (HasRank(*c, 1)) {
    const Shape& w = In(*c, 1)->shape;
    if (w.size() != x.size()) {
      return Error(*c, absl::StrCat("weight has ", w.size(), " dims, expected ",
                                    x.size()));
    }
    if (x[1] >= 0 && w[0] >= 0 && x[1] != w[0]) {
      return Error(*c, absl::StrCat("input has ", x[1], " channels but weight ",
                                    Str(w), " expects ", w[0]));
    }
    if (w[1] >= 0) {
      ASSIGN_OR_RETURN(out_ch, Dim(*c, i128{w[1]} * group));
    }
    kernel_default.assign(w.begin() + 2, w.end());
  }
  ASSIGN_OR_RETURN(WindowSpec win, Window(*c, spatial, kernel_default));
  const Shape out_pad = c->node->GetInts("output_padding", Shape(spatial, 0));
  Shape output_shape = c->node->GetInts("output_shape");
  if (output_shape.size() == x.size()) {
    output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  }
  if (out_pad.size() != spatial ||
      (!output_shape.empty() && output_shape.size() != spatial)) {
    return Error(*c, "output_padding/output_shape do not match the input rank");
  }
  for (int64_t p : out_pad) {
    if (p < 0 || p > kMaxDim) return Error(*c, "output_padding out of range");
  }
  Shape out = {x[0], out_ch};
  for (size_t i = 0; i < spatial; ++i) {
    if (!output_shape.empty()) {
      ASSIGN_OR_RETURN(int64_t o, Dim(*c, output_shape[i]));
      out.push_back(o);
      continue;
    }
    const int64_t in = x[2 + i];
    if (in < 0 || win.kernel[i] < 0) {
      out.push_back(-1);
      continue;
    }
    const i128 s = win.strides[i];
    if (win.auto_pad == "SAME_UPPER" || win.auto_pad == "SAME_LOWER") {
      ASSIGN_OR_RETURN(int64_t o, Dim(*c, i128{in} * s));
      out.push_back(o);
      continue;
    }
    const i128 eff = (i128{win.kernel[i]} - 1) * win.dilations[i] + 1;
    i128 pads = i128{win.pads[i]} + win.pads[i + spatial];
    if (win.auto_pad == "VALID") pads = 0;
    ASSIGN_OR_RETURN(int64_t o,
                     Dim(*c, s * (i128{in} - 1) + out_pad[i] + eff - pads));
    out.push_back(o);
  }
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::Status PoolRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (!HasRank(*c, 0)) {
    SetType(c, 0, dtype);
    SetType(c, 1, DType::kInt64);
    return absl::OkStatus();
  }
  const Shape& x = In(*c, 0)->shape;
  if (x.size() < 3) return Error(*c, "input needs at least 3 dims");
  const size_t spatial = x.size() - 2;
  if (!c->node->HasAttribute("kernel_shape")) {
    return Error(*c, "kernel_shape is required");
  }
  ASSIGN_OR_RETURN(WindowSpec win, Window(*c, spatial, {}));
  const bool ceil_mode = c->node->GetInt("ceil_mode", 0) != 0;
  Shape out = {x[0], x[1]};
  for (size_t i = 0; i < spatial; ++i) {
    ASSIGN_OR_RETURN(int64_t o, WindowOut(*c, win, i, x[2 + i], ceil_mode));
    out.push_back(o);
  }
  Set(c, 0, dtype, out);
  Set(c, 1, DType::kInt64, out);
  return absl::OkStatus();
}

absl::Status GlobalPoolRule(RuleContext* c) {
  if (!HasRank(*c, 0)) {
    SetType(c, 0, TypeOf(*c, 0));
    return absl::OkStatus();
  }
  Shape s = In(*c, 0)->shape;
  if (s.size() < 2) return Error(*c, "input needs at least 2 dims");
  for (size_t i = 2; i < s.size(); ++i) s[i] = 1;
  Set(c, 0, TypeOf(*c, 0), s);
  return absl::OkStatus();
}

// ---- linear algebra
// ----------------------------------------------------------

absl::Status GemmRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (!HasRank(*c, 0) || !HasRank(*c, 1)) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  Shape a = In(*c, 0)->shape, b = In(*c, 1)->shape;
  if (a.size() != 2 || b.size() != 2) {
    return Error(*c,
                 absl::StrCat("A ", Str(a), " and B ", Str(b), " must be 2-D"));
  }
  if (c->node->GetInt("transA", 0) != 0) std::swap(a[0], a[1]);
  if (c->node->GetInt("transB", 0) != 0) std::swap(b[0], b[1]);
  if (a[1] >= 0 && b[0] >= 0 && a[1] != b[0]) {
    return Error(*c, absl::StrCat("inner dims differ: A has K=", a[1],
                                  ", B has K=", b[0]));
  }
  const Shape out = {a[0], b[1]};
  if (HasRank(*c, 2)) {
    auto bc = BroadcastShapes(out, In(*c, 2)->shape);
    if (!bc.ok() || *bc != out) {
      return Error(*c, absl::StrCat("C ", Str(In(*c, 2)->shape),
                                    " does not broadcast to ", Str(out)));
    }
  }
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::Status MatMulLike(RuleContext* c, size_t ia, size_t ib, DType dtype) {
  if (!HasRank(*c, ia) || !HasRank(*c, ib)) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  Shape a = In(*c, ia)->shape, b = In(*c, ib)->shape;
  if (a.empty() || b.empty()) return Error(*c, "MatMul of a scalar");
  const bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  const int64_t ka = a.back(), kb = b[b.size() - 2];
  if (ka >= 0 && kb >= 0 && ka != kb) {
    return Error(*c, absl::StrCat("inner dims differ: ", Str(In(*c, ia)->shape),
                                  " x ", Str(In(*c, ib)->shape)));
  }
  auto batch = BroadcastShapes(Shape(a.begin(), a.end() - 2),
                               Shape(b.begin(), b.end() - 2));
  if (!batch.ok()) return Error(*c, std::string(batch.status().message()));
  Shape out = *batch;
  if (!a1) out.push_back(a[a.size() - 2]);
  if (!b1) out.push_back(b.back());
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::Status MatMulRule(RuleContext* c) {
  return MatMulLike(c, 0, 1, TypeOf(*c, 0));
}
absl::Status MatMulIntegerRule(RuleContext* c) {
  return MatMulLike(c, 0, 1, DType::kInt32);
}
absl::Status QLinearMatMulRule(RuleContext* c) {
  return MatMulLike(c, 0, 3, TypeOf(*c, 7));
}

// ---- shape manipulation
// -------------------------------------------------------

absl::Status ReshapeRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  std::vector<int64_t> target;
  if (c->opset < 5) {
    target = c->node->GetInts("shape");
  } else {
    auto t = ConstInts(*c, 1);
    if (!t.ok()) {
      if (HasRank(*c, 1) && In(*c, 1)->shape.size() == 1 &&
          In(*c, 1)->shape[0] >= 0) {
        Set(c, 0, dtype, Shape(In(*c, 1)->shape[0], -1));
      } else {
        SetType(c, 0, dtype);
      }
      return t.status().code() == absl::StatusCode::kNotFound ? absl::OkStatus()
                                                              : t.status();
    }
    target = *std::move(t);
  }
  Shape in = HasRank(*c, 0) ? In(*c, 0)->shape : Shape();
  const bool allow_zero = c->node->GetInt("allowzero", 0) != 0;
  Shape out(target.size());
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allow_zero) {
      if (!HasRank(*c, 0)) {
        d = -1;
        known = -1;
        out[i] = -1;
        continue;
      }
      if (i >= in.size()) {
        return Error(*c, absl::StrCat("shape[", i,
                                      "] = 0 copies a missing "
                                      "input dim"));
      }
      d = in[i];
      if (d < 0) {
        known = -1;
        out[i] = -1;
        continue;
      }
    } else if (d == -1) {
      if (infer >= 0) return Error(*c, "more than one -1 in shape");
      infer = static_cast<int>(i);
      out[i] = -1;
      continue;
    } else if (d < 0) {
      return Error(*c, absl::StrCat("invalid dim ", d, " in shape"));
    }
    if (d > kMaxDim) {
      return Error(*c, absl::StrCat("invalid dim ", d, " in shape"));
    }
    out[i] = d;
    if (known >= 0) {
      // The element count must fit int64 (kMaxDim^2 = 2^80 did not).
      if (i128{known} * d > std::numeric_limits<int64_t>::max()) {
        return Error(*c, absl::StrCat("shape ", Str(target), " is too large"));
      }
      known *= d;
    }
  }
  const int64_t total = HasRank(*c, 0) ? NumElements(in) : -1;
  if (total >= 0 && known >= 0) {
    if (infer >= 0) {
      if (known == 0 || total % known != 0) {
        return Error(
            *c, absl::StrCat("cannot reshape ", Str(in), " to ", Str(target)));
      }
      out[infer] = total / known;
    } else if (known != total) {
      return Error(
          *c, absl::StrCat("cannot reshape ", Str(in), " to ", Str(target)));
    }
  }
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::Status FlattenRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (!HasRank(*c, 0)) {
    Set(c, 0, dtype, {-1, -1});
    return absl::OkStatus();
  }
  const Shape& s = In(*c, 0)->shape;
  int64_t axis = c->node->GetInt("axis", 1);
  const int64_t r = static_cast<int64_t>(s.size());
  if (axis < -r || axis > r) return Error(*c, "axis out of range");
  if (axis < 0) axis += r;
  const int64_t a = NumElements(Shape(s.begin(), s.begin() + axis));
  const int64_t b = NumElements(Shape(s.begin() + axis, s.end()));
  Set(c, 0, dtype, {a, b});
  return absl::OkStatus();
}

absl::Status TransposeRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (!HasRank(*c, 0)) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  const Shape& s = In(*c, 0)->shape;
  const int64_t r = static_cast<int64_t>(s.size());
  Shape perm = c->node->GetInts("perm");
  if (perm.empty()) {
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  }
  if (static_cast<int64_t>(perm.size()) != r) {
    return Error(
        *c, absl::StrCat("perm has ", perm.size(), " entries for rank ", r));
  }
  Shape out;
  std::vector<bool> seen(r, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= r || seen[p])
      return Error(*c, "perm is not a permutation");
    seen[p] = true;
    out.push_back(s[p]);
  }
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::vector<int64_t>>> AxesOf(const RuleContext& c,
                                                           size_t input_index,
                                                           bool from_input) {
  if (!from_input) {
    if (!c.node->HasAttribute("axes")) return std::optional<Shape>();
    return std::optional<Shape>(c.node->GetInts("axes"));
  }
  if (!Present(c, input_index)) return std::optional<Shape>();
  auto v = ConstInts(c, input_index);
  if (!v.ok()) {
    if (v.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError("axes not constant");
    }
    return v.status();
  }
  return std::optional<Shape>(*std::move(v));
}

absl::Status SqueezeRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  auto axes = AxesOf(*c, 1, c->opset >= 13);
  if (!axes.ok() || !HasRank(*c, 0)) {
    SetType(c, 0, dtype);
    return axes.ok() || axes.status().code() == absl::StatusCode::kNotFound
               ? absl::OkStatus()
               : axes.status();
  }
  const Shape& s = In(*c, 0)->shape;
  const int64_t r = static_cast<int64_t>(s.size());
  std::vector<bool> drop(r, false);
  if (!axes->has_value() || (*axes)->empty()) {
    for (int64_t i = 0; i < r; ++i) {
      if (s[i] < 0) {
        SetType(c, 0, dtype);
        return absl::OkStatus();
      }
      drop[i] = s[i] == 1;
    }
  } else {
    for (int64_t a : **axes) {
      ASSIGN_OR_RETURN(int64_t axis, Axis(*c, a, r));
      if (s[axis] >= 0 && s[axis] != 1) {
        return Error(*c, absl::StrCat("cannot squeeze axis ", axis, " of size ",
                                      s[axis]));
      }
      drop[axis] = true;
    }
  }
  Shape out;
  for (int64_t i = 0; i < r; ++i) {
    if (!drop[i]) out.push_back(s[i]);
  }
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::Status UnsqueezeRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  auto axes = AxesOf(*c, 1, c->opset >= 13);
  if (!axes.ok() || !HasRank(*c, 0)) {
    SetType(c, 0, dtype);
    return axes.ok() || axes.status().code() == absl::StatusCode::kNotFound
               ? absl::OkStatus()
               : axes.status();
  }
  if (!axes->has_value()) return Error(*c, "axes are required");
  const Shape& s = In(*c, 0)->shape;
  const int64_t r = static_cast<int64_t>(s.size() + (*axes)->size());
  std::vector<bool> inserted(r, false);
  for (int64_t a : **axes) {
    ASSIGN_OR_RETURN(int64_t axis, Axis(*c, a, r));
    if (inserted[axis]) return Error(*c, "repeated axis");
    inserted[axis] = true;
  }
  Shape out;
  size_t k = 0;
  for (int64_t i = 0; i < r; ++i) out.push_back(inserted[i] ? 1 : s[k++]);
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::Status ConcatRule(RuleContext* c) {
  DType dtype = DType::kUndefined;
  Shape out;
  bool first = true;
  int64_t axis = 0;
  for (size_t k = 0; k < c->inputs.size(); ++k) {
    if (!Present(*c, k)) continue;
    const DType t = TypeOf(*c, k);
    if (dtype != DType::kUndefined && t != DType::kUndefined && t != dtype) {
      return Error(*c, absl::StrCat("input types differ (", DTypeName(dtype),
                                    " vs ", DTypeName(t), ")"));
    }
    if (t != DType::kUndefined) dtype = t;
    if (!HasRank(*c, k)) {
      SetType(c, 0, dtype);
      return absl::OkStatus();
    }
    const Shape& s = In(*c, k)->shape;
    if (first) {
      ASSIGN_OR_RETURN(axis, Axis(*c, c->node->GetInt("axis", 0),
                                  static_cast<int64_t>(s.size())));
      out = s;
      first = false;
      continue;
    }
    if (s.size() != out.size()) {
      return Error(*c, absl::StrCat("input ", k, " has shape ", Str(s),
                                    ", rank differs from ", Str(out)));
    }
    for (size_t i = 0; i < s.size(); ++i) {
      if (static_cast<int64_t>(i) == axis) {
        if (out[i] < 0 || s[i] < 0) {
          out[i] = -1;
        } else {
          ASSIGN_OR_RETURN(out[i], Dim(*c, i128{out[i]} + s[i]));
        }
      } else if (out[i] >= 0 && s[i] >= 0 && out[i] != s[i]) {
        return Error(*c, absl::StrCat("input ", k, " has shape ", Str(s),
                                      ", dim ", i, " differs from ", Str(out)));
      } else if (out[i] < 0) {
        out[i] = s[i];
      }
    }
  }
  if (first) {
    SetType(c, 0, dtype);
  } else {
    Set(c, 0, dtype, out);
  }
  return absl::OkStatus();
}

absl::Status SplitRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  const size_t n = c->outputs.size();
  if (!HasRank(*c, 0)) {
    for (size_t i = 0; i < n; ++i) SetType(c, i, dtype);
    return absl::OkStatus();
  }
  const Shape& s = In(*c, 0)->shape;
  ASSIGN_OR_RETURN(int64_t axis, Axis(*c, c->node->GetInt("axis", 0),
                                      static_cast<int64_t>(s.size())));
  std::vector<int64_t> split;
  if (c->opset < 13) {
    split = c->node->GetInts("split");
  } else if (Present(*c, 1)) {
    auto v = ConstInts(*c, 1);
    if (!v.ok()) {
      if (v.status().code() != absl::StatusCode::kNotFound) return v.status();
      for (size_t i = 0; i < n; ++i) {
        Shape o = s;
        o[axis] = -1;
        Set(c, i, dtype, o);
      }
      return absl::OkStatus();
    }
    split = *std::move(v);
  }
  const int64_t dim = s[axis];
  if (split.empty()) {
    const int64_t parts =
        c->node->GetInt("num_outputs", static_cast<int64_t>(n));
    if (parts <= 0 || static_cast<size_t>(parts) != n) {
      return Error(*c,
                   absl::StrCat("num_outputs ", parts, " but ", n, " outputs"));
    }
    if (dim >= 0) {
      if (c->node->HasAttribute("num_outputs")) {
        // Opset 18: chunks of ceil(dim/n), the last one smaller.
        const int64_t chunk = CeilDiv(dim, parts);
        int64_t left = dim;
        for (int64_t i = 0; i < parts; ++i) {
          split.push_back(std::max<int64_t>(std::min(chunk, left), 0));
          left -= chunk;
        }
      } else {
        if (dim % parts != 0) {
          return Error(*c, absl::StrCat("dim ", dim, " does not split into ",
                                        parts, " equal parts"));
        }
        split.assign(parts, dim / parts);
      }
    } else {
      split.assign(parts, -1);
    }
  }
  if (split.size() != n) {
    return Error(*c, absl::StrCat("split has ", split.size(), " entries for ",
                                  n, " outputs"));
  }
  int64_t total = 0;
  for (int64_t v : split) {
    if (v < -1 || v > kMaxDim) return Error(*c, "split size out of range");
    total = (total < 0 || v < 0) ? -1 : total + v;
  }
  if (dim >= 0 && total >= 0 && total != dim) {
    return Error(*c, absl::StrCat("split sizes sum to ", total,
                                  " but the axis has ", dim));
  }
  for (size_t i = 0; i < n; ++i) {
    Shape o = s;
    o[axis] = split[i];
    Set(c, i, dtype, o);
  }
  return absl::OkStatus();
}

absl::Status SliceRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (!HasRank(*c, 0)) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  const Shape& s = In(*c, 0)->shape;
  const int64_t r = static_cast<int64_t>(s.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (c->opset < 10) {
    starts = c->node->GetInts("starts");
    ends = c->node->GetInts("ends");
    axes = c->node->GetInts("axes");
  } else {
    auto st = ConstInts(*c, 1), en = ConstInts(*c, 2);
    bool known = st.ok() && en.ok();
    if (known && Present(*c, 3)) {
      auto ax = ConstInts(*c, 3);
      known = ax.ok();
      if (known) axes = *ax;
    }
    if (known && Present(*c, 4)) {
      auto sp = ConstInts(*c, 4);
      known = sp.ok();
      if (known) steps = *sp;
    }
    if (!known) {
      Set(c, 0, dtype, Shape(r, -1));
      return absl::OkStatus();
    }
    starts = *st;
    ends = *en;
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(i);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return Error(*c, "starts, ends, axes and steps differ in length");
  }
  Shape out = s;
  for (size_t k = 0; k < axes.size(); ++k) {
    ASSIGN_OR_RETURN(int64_t axis, Axis(*c, axes[k], r));
    const int64_t dim = s[axis];
    const int64_t st = steps[k];
    if (st == 0) return Error(*c, "slice step is 0");
    if (dim < 0) {
      out[axis] = -1;
      continue;
    }
    i128 b = starts[k], e = ends[k];
    if (b < 0) b = b < -dim ? 0 : b + dim;
    if (e < 0) e = e < -dim ? (st > 0 ? 0 : -1) : e + dim;
    if (st > 0) {
      b = std::clamp<i128>(b, 0, dim);
      e = std::clamp<i128>(e, 0, dim);
      out[axis] = static_cast<int64_t>(e > b ? (e - b - 1) / st + 1 : 0);
    } else {
      b = std::clamp<i128>(b, 0, i128{dim} - 1);
      e = std::clamp<i128>(e, -1, i128{dim} - 1);
      out[axis] =
          static_cast<int64_t>(b > e ? (b - e - 1) / (-i128{st}) + 1 : 0);
    }
  }
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::Status PadRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (!HasRank(*c, 0)) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  const Shape& s = In(*c, 0)->shape;
  const int64_t r = static_cast<int64_t>(s.size());
  std::vector<int64_t> pads;
  if (c->opset < 11) {
    pads =
        c->node->GetInts(c->node->HasAttribute("pads") ? "pads" : "paddings");
  } else {
    auto p = ConstInts(*c, 1);
    if (!p.ok()) {
      Set(c, 0, dtype, Shape(r, -1));
      return absl::OkStatus();
    }
    pads = *std::move(p);
  }
  std::vector<int64_t> axes;
  if (c->opset >= 18 && Present(*c, 3)) {
    auto a = ConstInts(*c, 3);
    if (!a.ok()) {
      Set(c, 0, dtype, Shape(r, -1));
      return absl::OkStatus();
    }
    for (int64_t v : *a) {
      ASSIGN_OR_RETURN(int64_t axis, Axis(*c, v, r));
      axes.push_back(axis);
    }
  } else {
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  const size_t na = axes.size();
  if (pads.size() != 2 * na) {
    return Error(*c, absl::StrCat("pads has ", pads.size(),
                                  " entries, expected ", 2 * na));
  }
  Shape out = s;
  for (size_t k = 0; k < na; ++k) {
    const int64_t a = axes[k];
    if (out[a] < 0) continue;
    const i128 padded = i128{out[a]} + pads[k] + pads[k + na];
    if (padded < 0) return Error(*c, "pads crop below zero");
    ASSIGN_OR_RETURN(out[a], Dim(*c, padded));
  }
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::Status ExpandRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  auto target = ConstInts(*c, 1);
  if (!target.ok() || !HasRank(*c, 0)) {
    if (HasRank(*c, 1) && In(*c, 1)->shape.size() == 1 &&
        In(*c, 1)->shape[0] >= 0 && HasRank(*c, 0)) {
      const int64_t r = std::max<int64_t>(
          In(*c, 1)->shape[0], static_cast<int64_t>(In(*c, 0)->shape.size()));
      Set(c, 0, dtype, Shape(r, -1));
    } else {
      SetType(c, 0, dtype);
    }
    return absl::OkStatus();
  }
  auto out = BroadcastShapes(In(*c, 0)->shape, *target);
  if (!out.ok()) return Error(*c, std::string(out.status().message()));
  Set(c, 0, dtype, *out);
  return absl::OkStatus();
}

absl::Status TileRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (!HasRank(*c, 0)) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  const Shape& s = In(*c, 0)->shape;
  auto rep = ConstInts(*c, 1);
  if (!rep.ok()) {
    Set(c, 0, dtype, Shape(s.size(), -1));
    return absl::OkStatus();
  }
  if (rep->size() != s.size()) {
    return Error(*c, absl::StrCat("repeats has ", rep->size(),
                                  " entries for rank ", s.size()));
  }
  Shape out = s;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((*rep)[i] < 0) return Error(*c, "negative repeat");
    if (out[i] >= 0) {
      ASSIGN_OR_RETURN(out[i], Dim(*c, i128{out[i]} * (*rep)[i]));
    }
  }
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::Status ShapeOpRule(RuleContext* c) {
  if (!HasRank(*c, 0)) {
    Set(c, 0, DType::kInt64, {-1});
    return absl::OkStatus();
  }
  const int64_t r = static_cast<int64_t>(In(*c, 0)->shape.size());
  int64_t start = c->node->GetInt("start", 0), end = c->node->GetInt("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  Set(c, 0, DType::kInt64, {std::max<int64_t>(end - start, 0)});
  return absl::OkStatus();
}

absl::Status SizeRule(RuleContext* c) {
  Set(c, 0, DType::kInt64, {});
  return absl::OkStatus();
}

absl::Status GatherRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (!HasRank(*c, 0) || !HasRank(*c, 1)) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  const Shape& d = In(*c, 0)->shape;
  const Shape& idx = In(*c, 1)->shape;
  ASSIGN_OR_RETURN(int64_t axis, Axis(*c, c->node->GetInt("axis", 0),
                                      static_cast<int64_t>(d.size())));
  Shape out(d.begin(), d.begin() + axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), d.begin() + axis + 1, d.end());
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::Status GatherElementsRule(RuleContext* c) {
  Same(c, 0, 1, TypeOf(*c, 0));
  return absl::OkStatus();
}

absl::Status GatherNDRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (!HasRank(*c, 0) || !HasRank(*c, 1) || In(*c, 1)->shape.empty() ||
      In(*c, 1)->shape.back() < 0) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  const Shape& d = In(*c, 0)->shape;
  const Shape& idx = In(*c, 1)->shape;
  const int64_t b = c->node->GetInt("batch_dims", 0);
  const int64_t k = idx.back();
  if (b < 0 || k < 0 || b > static_cast<int64_t>(d.size()) ||
      k > static_cast<int64_t>(d.size()) ||
      b + k > static_cast<int64_t>(d.size())) {
    return Error(*c, "indices last dim too large for data rank");
  }
  Shape out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), d.begin() + b + k, d.end());
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::Status ConstantOfShapeRule(RuleContext* c) {
  DType dtype = DType::kFloat;
  const Attribute* v = c->node->FindAttribute("value");
  if (v != nullptr && v->type == Attribute::Type::kTensor) dtype = v->t.dtype();
  auto shape = ConstInts(*c, 0);
  if (!shape.ok()) {
    if (HasRank(*c, 0) && In(*c, 0)->shape.size() == 1 &&
        In(*c, 0)->shape[0] >= 0) {
      Set(c, 0, dtype, Shape(In(*c, 0)->shape[0], -1));
    } else {
      SetType(c, 0, dtype);
    }
    return absl::OkStatus();
  }
  for (int64_t d : *shape) {
    if (d < 0) return Error(*c, "negative dim in shape");
  }
  Set(c, 0, dtype, *shape);
  return absl::OkStatus();
}

absl::Status RangeRule(RuleContext* c) {
  Set(c, 0, TypeOf(*c, 0), {-1});
  return absl::OkStatus();
}

absl::Status ReduceRule(RuleContext* c) {
  const std::string& op = c->node->op_type;
  const bool arg = op == "ArgMax" || op == "ArgMin";
  const DType dtype = arg ? DType::kInt64 : TypeOf(*c, 0);
  const bool keep = c->node->GetInt("keepdims", 1) != 0;
  if (!HasRank(*c, 0)) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  const Shape& s = In(*c, 0)->shape;
  const int64_t r = static_cast<int64_t>(s.size());
  std::vector<int64_t> axes;
  bool axes_known = true;
  if (arg) {
    axes = {c->node->GetInt("axis", 0)};
  } else {
    const bool from_input = op == "ReduceSum" ? c->opset >= 13 : c->opset >= 18;
    auto a = AxesOf(*c, 1, from_input);
    if (!a.ok()) {
      if (a.status().code() != absl::StatusCode::kNotFound) return a.status();
      axes_known = false;
    } else if (a->has_value()) {
      axes = **a;
    }
  }
  if (!axes_known) {
    if (keep) {
      Set(c, 0, dtype, Shape(r, -1));
    } else {
      SetType(c, 0, dtype);
    }
    return absl::OkStatus();
  }
  if (axes.empty() && c->node->GetInt("noop_with_empty_axes", 0) != 0) {
    Set(c, 0, dtype, s);
    return absl::OkStatus();
  }
  std::vector<bool> red(r, axes.empty());
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t axis, Axis(*c, a, r));
    red[axis] = true;
  }
  Shape out;
  for (int64_t i = 0; i < r; ++i) {
    if (!red[i]) {
      out.push_back(s[i]);
    } else if (keep) {
      out.push_back(1);
    }
  }
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::Status TopKRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (!HasRank(*c, 0)) {
    SetType(c, 0, dtype);
    SetType(c, 1, DType::kInt64);
    return absl::OkStatus();
  }
  Shape s = In(*c, 0)->shape;
  ASSIGN_OR_RETURN(int64_t axis, Axis(*c, c->node->GetInt("axis", -1),
                                      static_cast<int64_t>(s.size())));
  int64_t k = -1;
  if (c->opset < 10) {
    k = c->node->GetInt("k", -1);
  } else {
    auto v = ConstInts(*c, 1);
    if (v.ok() && v->size() == 1) k = (*v)[0];
  }
  s[axis] = k;
  Set(c, 0, dtype, s);
  Set(c, 1, DType::kInt64, s);
  return absl::OkStatus();
}

absl::Status ResizeRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (!HasRank(*c, 0)) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  const Shape& s = In(*c, 0)->shape;
  const int64_t r = static_cast<int64_t>(s.size());
  const bool upsample = c->node->op_type == "Upsample";
  std::vector<float> scales;
  std::vector<int64_t> sizes;
  bool known = true;
  if (upsample && c->opset < 9) {
    scales = c->node->GetFloats("scales");
  } else {
    const size_t scales_index = (upsample || c->opset < 11) ? 1 : 2;
    const Tensor* st =
        Present(*c, scales_index) ? Const(*c, scales_index) : nullptr;
    if (st != nullptr && st->num_elements() > 0) {
      auto f = st->CastToFloat();
      if (!f.ok()) return Error(*c, "scales must be float");
      scales.assign(f->data<float>(), f->data<float>() + f->num_elements());
    } else if (!upsample && c->opset >= 11 && Present(*c, 3)) {
      auto v = ConstInts(*c, 3);
      if (v.ok()) {
        sizes = *std::move(v);
      } else {
        known = false;
      }
    } else if (Present(*c, scales_index) && st == nullptr) {
      known = false;
    }
  }
  if (!known) {
    Set(c, 0, dtype, Shape(r, -1));
    return absl::OkStatus();
  }
  std::vector<int64_t> axes = c->node->GetInts("axes");
  if (axes.empty()) {
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  for (int64_t& a : axes) {
    ASSIGN_OR_RETURN(a, Axis(*c, a, r));
  }
  Shape out = s;
  if (!scales.empty()) {
    if (scales.size() != axes.size()) {
      return Error(*c, absl::StrCat("scales has ", scales.size(),
                                    " entries for ", axes.size(), " axes"));
    }
    for (size_t k = 0; k < axes.size(); ++k) {
      if (s[axes[k]] < 0) continue;
      if (!(scales[k] > 0)) return Error(*c, "scales must be positive");
      const double o = std::floor(static_cast<double>(s[axes[k]]) * scales[k]);
      if (!(o <= static_cast<double>(kMaxDim))) {
        return Error(*c, "scaled dimension exceeds 2^40");
      }
      out[axes[k]] = static_cast<int64_t>(o);
    }
  } else if (!sizes.empty()) {
    if (sizes.size() != axes.size()) {
      return Error(*c, absl::StrCat("sizes has ", sizes.size(), " entries for ",
                                    axes.size(), " axes"));
    }
    const std::string policy =
        c->node->GetString("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") {
      for (size_t k = 0; k < axes.size(); ++k) {
        ASSIGN_OR_RETURN(out[axes[k]], Dim(*c, sizes[k]));
      }
    } else {
      double scale = policy == "not_larger" ? 1e300 : 0;
      for (size_t k = 0; k < axes.size(); ++k) {
        if (s[axes[k]] <= 0) continue;
        const double f = static_cast<double>(sizes[k]) / s[axes[k]];
        scale =
            policy == "not_larger" ? std::min(scale, f) : std::max(scale, f);
      }
      for (size_t k = 0; k < axes.size(); ++k) {
        if (s[axes[k]] < 0) continue;
        const double o =
            std::nearbyint(scale * static_cast<double>(s[axes[k]]));
        if (!(o >= 0 && o <= static_cast<double>(kMaxDim))) {
          return Error(*c, "resized dimension out of range");
        }
        out[axes[k]] = static_cast<int64_t>(o);
      }
    }
  } else {
    return Error(*c, "needs scales or sizes");
  }
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::Status DepthToSpaceRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (!HasRank(*c, 0)) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  Shape s = In(*c, 0)->shape;
  if (s.size() != 4) return Error(*c, "input must be 4-D");
  const int64_t b = c->node->GetInt("blocksize", 0);
  if (b <= 0 || b > (int64_t{1} << 20)) {
    return Error(*c, "blocksize must be positive");
  }
  if (c->node->op_type == "DepthToSpace") {
    if (s[1] >= 0 && s[1] % (b * b) != 0) {
      return Error(
          *c, absl::StrCat("channels ", s[1], " not divisible by blocksize^2"));
    }
    if (s[1] >= 0) s[1] /= b * b;
    for (int i : {2, 3}) {
      if (s[i] >= 0) {
        ASSIGN_OR_RETURN(s[i], Dim(*c, i128{s[i]} * b));
      }
    }
  } else {
    if (s[1] >= 0) {
      ASSIGN_OR_RETURN(s[1], Dim(*c, i128{s[1]} * b * b));
    }
    if (s[2] >= 0) s[2] /= b;
    if (s[3] >= 0) s[3] /= b;
  }
  Set(c, 0, dtype, s);
  return absl::OkStatus();
}

absl::Status RecurrentRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  const int64_t hidden = c->node->GetInt("hidden_size", -1);
  const std::string dir = c->node->GetString("direction", "forward");
  const int64_t dirs = dir == "bidirectional" ? 2 : 1;
  const bool batch_first = c->node->GetInt("layout", 0) != 0;
  if (!HasRank(*c, 0)) {
    for (size_t i = 0; i < c->outputs.size(); ++i) SetType(c, i, dtype);
    return absl::OkStatus();
  }
  const Shape& x = In(*c, 0)->shape;
  if (x.size() != 3) return Error(*c, "X must be 3-D");
  const int64_t seq = batch_first ? x[1] : x[0];
  const int64_t batch = batch_first ? x[0] : x[1];
  Set(c, 0, dtype,
      batch_first ? Shape{batch, seq, dirs, hidden}
                  : Shape{seq, dirs, batch, hidden});
  const Shape state =
      batch_first ? Shape{batch, dirs, hidden} : Shape{dirs, batch, hidden};
  for (size_t i = 1; i < c->outputs.size(); ++i) Set(c, i, dtype, state);
  return absl::OkStatus();
}

absl::Status NonZeroRule(RuleContext* c) {
  if (HasRank(*c, 0)) {
    Set(c, 0, DType::kInt64,
        {static_cast<int64_t>(In(*c, 0)->shape.size()), -1});
  } else {
    Set(c, 0, DType::kInt64, {-1, -1});
  }
  return absl::OkStatus();
}

absl::Status EyeLikeRule(RuleContext* c) {
  const int64_t t = c->node->GetInt("dtype", 0);
  Same(c, 0, 0, t != 0 ? static_cast<DType>(t) : TypeOf(*c, 0));
  return absl::OkStatus();
}

absl::Status BernoulliRule(RuleContext* c) {
  const int64_t t = c->node->GetInt("dtype", 0);
  Same(c, 0, 0, t != 0 ? static_cast<DType>(t) : TypeOf(*c, 0));
  return absl::OkStatus();
}

absl::Status EinsumRule(RuleContext* c) {
  // Output subscripts after "->" (or, implicitly, the letters used once, in
  // alphabetical order); each letter takes its dim from the inputs. No
  // ellipsis.
  std::string eq = c->node->GetString("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  DType dtype = TypeOf(*c, 0);
  if (eq.find("...") != std::string::npos) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  if (eq.find("->") == std::string::npos) {
    std::map<char, int> count;
    for (char ch : eq) {
      if (ch != ',') ++count[ch];
    }
    eq += "->";
    for (const auto& [ch, n] : count) {
      if (n == 1) eq += ch;
    }
  }
  const size_t arrow = eq.find("->");
  std::map<char, int64_t> dims;
  size_t pos = 0;
  for (size_t k = 0; k < c->inputs.size(); ++k) {
    size_t end = eq.find_first_of(",-", pos);
    const std::string term = eq.substr(pos, end - pos);
    pos = end + 1;
    if (!HasRank(*c, k) || In(*c, k)->shape.size() != term.size()) {
      if (HasRank(*c, k)) {
        return Error(
            *c, absl::StrCat("input ", k, " rank does not match '", term, "'"));
      }
      continue;
    }
    for (size_t i = 0; i < term.size(); ++i) {
      const int64_t d = In(*c, k)->shape[i];
      auto [it, inserted] = dims.emplace(term[i], d);
      if (!inserted && it->second == 1) it->second = d;
      if (!inserted && it->second < 0) it->second = d;
    }
  }
  Shape out;
  for (char ch : eq.substr(arrow + 2)) {
    auto it = dims.find(ch);
    out.push_back(it == dims.end() ? -1 : it->second);
  }
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

// If: infer both branches; a constant condition picks one, otherwise dims
// that differ become unknown.
absl::Status IfRule(RuleContext* c) {
  const Attribute* then_b = c->node->FindAttribute("then_branch");
  const Attribute* else_b = c->node->FindAttribute("else_branch");
  if (then_b == nullptr || else_b == nullptr || !then_b->g || !else_b->g) {
    return Error(*c, "then_branch and else_branch are required");
  }
  const Tensor* cond = Const(*c, 0);
  auto check = [&](const std::vector<ValueInfo>& outs) -> absl::Status {
    if (outs.size() != c->outputs.size()) {
      return Error(*c,
                   absl::StrCat("a branch has ", outs.size(),
                                " outputs, the node has ", c->outputs.size()));
    }
    return absl::OkStatus();
  };
  if (cond != nullptr && cond->num_elements() == 1) {
    // Only the branch that runs has to make sense for these shapes.
    auto v = ToInt64Vector(*cond);
    const bool take_then = v.ok() && (*v)[0] != 0;
    ASSIGN_OR_RETURN(
        std::vector<ValueInfo> outs,
        c->infer_subgraph((take_then ? then_b : else_b)->g.get(), {}));
    RETURN_IF_ERROR(check(outs));
    for (size_t i = 0; i < outs.size(); ++i) {
      c->outputs[i].dtype = outs[i].dtype;
      c->outputs[i].has_shape = outs[i].has_shape;
      c->outputs[i].shape = outs[i].shape;
    }
    return absl::OkStatus();
  }
  // Unknown condition: a branch that cannot work with these shapes (models
  // switch on e.g. the sample rate) cannot be the one that runs, so the
  // other decides; both failing is an error.
  absl::StatusOr<std::vector<ValueInfo>> t =
      c->infer_subgraph(then_b->g.get(), {});
  absl::StatusOr<std::vector<ValueInfo>> e =
      c->infer_subgraph(else_b->g.get(), {});
  if (!t.ok() && !e.ok()) return t.status();
  if (!t.ok()) t = e;
  if (!e.ok()) e = t;
  RETURN_IF_ERROR(check(*t));
  RETURN_IF_ERROR(check(*e));
  for (size_t i = 0; i < c->outputs.size(); ++i) {
    const ValueInfo& a = (*t)[i];
    const ValueInfo& b = (*e)[i];
    c->outputs[i].dtype = a.dtype != DType::kUndefined ? a.dtype : b.dtype;
    if (a.has_shape && b.has_shape && a.shape.size() == b.shape.size()) {
      Shape s = a.shape;
      for (size_t d = 0; d < s.size(); ++d) {
        if (s[d] != b.shape[d]) s[d] = -1;
      }
      Set(c, i, c->outputs[i].dtype, s);
    }
  }
  return absl::OkStatus();
}

// Loop: carried values keep their initial types; scan outputs gain a
// leading dimension of unknown length.
absl::Status LoopRule(RuleContext* c) {
  const Attribute* body = c->node->FindAttribute("body");
  if (body == nullptr || !body->g) return Error(*c, "body is required");
  const size_t carried = c->inputs.size() >= 2 ? c->inputs.size() - 2 : 0;
  std::vector<ValueInfo> body_inputs;
  ValueInfo iter;
  iter.dtype = DType::kInt64;
  iter.has_shape = true;
  body_inputs.push_back(iter);
  ValueInfo cond;
  cond.dtype = DType::kBool;
  cond.has_shape = true;
  body_inputs.push_back(cond);
  for (size_t k = 0; k < carried; ++k) {
    ValueInfo v;
    if (In(*c, k + 2) != nullptr) v = *In(*c, k + 2);
    body_inputs.push_back(v);
  }
  ASSIGN_OR_RETURN(std::vector<ValueInfo> outs,
                   c->infer_subgraph(body->g.get(), body_inputs));
  for (size_t i = 0; i < c->outputs.size(); ++i) {
    if (i + 1 >= outs.size()) break;
    const ValueInfo& o = outs[i + 1];  // body output 0 is the condition
    if (i < carried) {
      const ValueInfo* init = In(*c, i + 2);
      c->outputs[i].dtype = o.dtype;
      if (init != nullptr && init->has_shape && o.has_shape &&
          init->shape == o.shape) {
        Set(c, i, o.dtype, o.shape);
      }
    } else {
      c->outputs[i].dtype = o.dtype;
      if (o.has_shape) {
        Shape s = {-1};
        s.insert(s.end(), o.shape.begin(), o.shape.end());
        Set(c, i, o.dtype, s);
      }
    }
  }
  return absl::OkStatus();
}

// ---- less common ops -------------------------------------------------------

absl::Status NonMaxSuppressionRule(RuleContext* c) {
  Set(c, 0, DType::kInt64, {-1, 3});  // data-dependent count
  return absl::OkStatus();
}

absl::Status CompressRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (!c->node->HasAttribute("axis") || !HasRank(*c, 0)) {
    Set(c, 0, dtype, {-1});
    return absl::OkStatus();
  }
  Shape s = In(*c, 0)->shape;
  ASSIGN_OR_RETURN(int64_t axis, Axis(*c, c->node->GetInt("axis", 0),
                                      static_cast<int64_t>(s.size())));
  s[axis] = -1;
  Set(c, 0, dtype, s);
  return absl::OkStatus();
}

absl::Status UniqueRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (c->node->HasAttribute("axis") && HasRank(*c, 0)) {
    Shape s = In(*c, 0)->shape;
    ASSIGN_OR_RETURN(int64_t axis, Axis(*c, c->node->GetInt("axis", 0),
                                        static_cast<int64_t>(s.size())));
    s[axis] = -1;
    Set(c, 0, dtype, s);
  } else {
    Set(c, 0, dtype, {-1});
  }
  Set(c, 1, DType::kInt64, {-1});
  if (HasRank(*c, 0)) {
    const Shape& s = In(*c, 0)->shape;
    int64_t n = -1;
    if (c->node->HasAttribute("axis")) {
      auto axis =
          Axis(*c, c->node->GetInt("axis", 0), static_cast<int64_t>(s.size()));
      if (axis.ok()) n = s[*axis];
    } else {
      n = NumElements(s);
    }
    Set(c, 2, DType::kInt64, {n});
  } else {
    Set(c, 2, DType::kInt64, {-1});
  }
  Set(c, 3, DType::kInt64, {-1});
  return absl::OkStatus();
}

absl::Status OneHotRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 2);
  if (!HasRank(*c, 0)) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  Shape s = In(*c, 0)->shape;
  int64_t depth = -1;
  if (const Tensor* d = Const(*c, 1); d != nullptr && d->num_elements() == 1) {
    auto f = d->CastToFloat();
    if (f.ok()) {
      const double v = f->data<float>()[0];
      if (!(v >= 0 && v <= static_cast<double>(kMaxDim))) {
        return Error(*c, "depth out of range");
      }
      depth = static_cast<int64_t>(v);
    }
  }
  const int64_t r = static_cast<int64_t>(s.size()) + 1;
  ASSIGN_OR_RETURN(int64_t axis, Axis(*c, c->node->GetInt("axis", -1), r));
  s.insert(s.begin() + axis, depth);
  Set(c, 0, dtype, s);
  return absl::OkStatus();
}

absl::Status GridSampleRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (!HasRank(*c, 0) || !HasRank(*c, 1)) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  const Shape& x = In(*c, 0)->shape;
  const Shape& grid = In(*c, 1)->shape;  // [N, H_out, W_out, 2]
  if (x.size() < 3 || grid.size() != x.size()) {
    return Error(*c, "X and grid ranks do not match");
  }
  Shape out = {x[0], x[1]};
  out.insert(out.end(), grid.begin() + 1, grid.end() - 1);
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

absl::Status RoiAlignRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  const int64_t rois =
      HasRank(*c, 1) && !In(*c, 1)->shape.empty() ? In(*c, 1)->shape[0] : -1;
  const int64_t channels =
      HasRank(*c, 0) && In(*c, 0)->shape.size() > 1 ? In(*c, 0)->shape[1] : -1;
  Set(c, 0, dtype,
      {rois, channels, c->node->GetInt("output_height", 1),
       c->node->GetInt("output_width", 1)});
  return absl::OkStatus();
}

absl::Status DetRule(RuleContext* c) {
  if (!HasRank(*c, 0) || In(*c, 0)->shape.size() < 2) {
    SetType(c, 0, TypeOf(*c, 0));
    return absl::OkStatus();
  }
  const Shape& s = In(*c, 0)->shape;
  Set(c, 0, TypeOf(*c, 0), Shape(s.begin(), s.end() - 2));
  return absl::OkStatus();
}

absl::Status WindowRule(RuleContext* c) {
  const DType dtype = static_cast<DType>(c->node->GetInt("output_datatype", 1));
  auto size = ConstInts(*c, 0);
  if (size.ok() && size->size() == 1) {
    ASSIGN_OR_RETURN(int64_t n, Dim(*c, (*size)[0]));
    Set(c, 0, dtype, {n});
  } else {
    Set(c, 0, dtype, {-1});
  }
  return absl::OkStatus();
}

absl::Status RandomLikeRule(RuleContext* c) {
  const int64_t t = c->node->GetInt("dtype", 0);
  Same(c, 0, 0, t != 0 ? static_cast<DType>(t) : TypeOf(*c, 0));
  return absl::OkStatus();
}

absl::Status RandomRule(RuleContext* c) {
  const DType dtype = static_cast<DType>(c->node->GetInt("dtype", 1));
  Shape s = c->node->GetInts("shape");
  for (int64_t& d : s) {
    ASSIGN_OR_RETURN(d, Dim(*c, d));
  }
  Set(c, 0, dtype, s);
  return absl::OkStatus();
}

// NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss: [N, d1, ...] per
// element with reduction "none", else a scalar; SCE's optional second output
// (log-probabilities) has the scores' shape.
absl::Status LossRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  const std::string reduction = c->node->GetString("reduction", "mean");
  if (reduction != "none") {
    Set(c, 0, dtype, {});
  } else if (HasRank(*c, 0) && In(*c, 0)->shape.size() >= 2) {
    Shape s = In(*c, 0)->shape;
    s.erase(s.begin() + 1);  // drop the class axis
    Set(c, 0, dtype, s);
  } else {
    SetType(c, 0, dtype);
  }
  Same(c, 1, 0, dtype);
  return absl::OkStatus();
}

absl::Status MaxUnpoolRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  if (Present(*c, 2)) {
    auto shape = ConstInts(*c, 2);
    if (shape.ok()) {
      Shape out;
      for (int64_t d : *shape) {
        ASSIGN_OR_RETURN(int64_t v, Dim(*c, d));
        out.push_back(v);
      }
      Set(c, 0, dtype, out);
    } else {
      SetType(c, 0, dtype);
    }
    return absl::OkStatus();
  }
  if (!HasRank(*c, 0) || In(*c, 0)->shape.size() < 3) {
    SetType(c, 0, dtype);
    return absl::OkStatus();
  }
  const Shape& x = In(*c, 0)->shape;
  const size_t spatial = x.size() - 2;
  ASSIGN_OR_RETURN(WindowSpec win, Window(*c, spatial, {}));
  Shape out = {x[0], x[1]};
  for (size_t i = 0; i < spatial; ++i) {
    if (x[2 + i] < 0) {
      out.push_back(-1);
      continue;
    }
    // Inverse of pooling: (in - 1) * stride + kernel - pads.
    ASSIGN_OR_RETURN(int64_t o, Dim(*c, (i128{x[2 + i]} - 1) * win.strides[i] +
                                            win.kernel[i] - win.pads[i] -
                                            win.pads[i + spatial]));
    out.push_back(o);
  }
  Set(c, 0, dtype, out);
  return absl::OkStatus();
}

const std::map<std::string, ShapeRule>& Rules() {
  static const auto* rules = [] {
    auto* m = new std::map<std::string, ShapeRule>();
    for (const char* op : {"Relu",
                           "LeakyRelu",
                           "PRelu",
                           "Sigmoid",
                           "Tanh",
                           "HardSigmoid",
                           "HardSwish",
                           "Elu",
                           "Selu",
                           "Celu",
                           "Gelu",
                           "Erf",
                           "Sqrt",
                           "Exp",
                           "Log",
                           "Neg",
                           "Abs",
                           "Reciprocal",
                           "Floor",
                           "Ceil",
                           "Round",
                           "Sin",
                           "Cos",
                           "Tan",
                           "Asin",
                           "Acos",
                           "Atan",
                           "Sinh",
                           "Cosh",
                           "Asinh",
                           "Acosh",
                           "Atanh",
                           "Softplus",
                           "Softsign",
                           "Sign",
                           "Identity",
                           "Softmax",
                           "LogSoftmax",
                           "Hardmax",
                           "Clip",
                           "LRN",
                           "InstanceNormalization",
                           "MeanVarianceNormalization",
                           "GroupNormalization",
                           "LpNormalization",
                           "ThresholdedRelu",
                           "Shrink",
                           "Mish",
                           "CumSum",
                           "Trilu",
                           "BitwiseNot",
                           "ScatterElements",
                           "ScatterND",
                           "Scatter",
                           "Bernoulli",
                           "ReverseSequence",
                           "Not"}) {
      (*m)[op] = UnaryRule;
    }
    for (const char* op : {"IsNaN", "IsInf"}) (*m)[op] = BoolUnaryRule;
    for (const char* op :
         {"Add", "Sub", "Mul", "Div", "Mod", "Max", "Min", "Sum", "Mean",
          "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
      (*m)[op] = ArithmeticRule;
    }
    (*m)["Pow"] = PowRule;
    for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual",
                           "GreaterOrEqual", "And", "Or", "Xor"}) {
      (*m)[op] = CompareRule;
    }
    (*m)["Where"] = WhereRule;
    (*m)["Cast"] = CastRule;
    (*m)["CastLike"] = CastLikeRule;
    (*m)["Dropout"] = DropoutRule;
    (*m)["BatchNormalization"] = BatchNormRule;
    (*m)["LayerNormalization"] = LayerNormRule;
    (*m)["QuantizeLinear"] = QuantizeRule;
    (*m)["DequantizeLinear"] = DequantizeRule;
    (*m)["DynamicQuantizeLinear"] = DynamicQuantizeRule;
    (*m)["Conv"] = ConvRule;
    (*m)["ConvInteger"] = ConvIntegerRule;
    (*m)["QLinearConv"] = QLinearConvRule;
    (*m)["ConvTranspose"] = ConvTransposeRule;
    for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) {
      (*m)[op] = PoolRule;
    }
    for (const char* op :
         {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
      (*m)[op] = GlobalPoolRule;
    }
    (*m)["Gemm"] = GemmRule;
    (*m)["MatMul"] = MatMulRule;
    (*m)["MatMulInteger"] = MatMulIntegerRule;
    (*m)["QLinearMatMul"] = QLinearMatMulRule;
    (*m)["Einsum"] = EinsumRule;
    (*m)["Reshape"] = ReshapeRule;
    (*m)["Flatten"] = FlattenRule;
    (*m)["Transpose"] = TransposeRule;
    (*m)["Squeeze"] = SqueezeRule;
    (*m)["Unsqueeze"] = UnsqueezeRule;
    (*m)["Concat"] = ConcatRule;
    (*m)["Split"] = SplitRule;
    (*m)["Slice"] = SliceRule;
    (*m)["Pad"] = PadRule;
    (*m)["Expand"] = ExpandRule;
    (*m)["Tile"] = TileRule;
    (*m)["Shape"] = ShapeOpRule;
    (*m)["Size"] = SizeRule;
    (*m)["Gather"] = GatherRule;
    (*m)["GatherElements"] = GatherElementsRule;
    (*m)["GatherND"] = GatherNDRule;
    (*m)["ConstantOfShape"] = ConstantOfShapeRule;
    (*m)["Range"] = RangeRule;
    for (const char* op :
         {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
          "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
          "ReduceSumSquare", "ArgMax", "ArgMin"}) {
      (*m)[op] = ReduceRule;
    }
    (*m)["TopK"] = TopKRule;
    (*m)["Resize"] = ResizeRule;
    (*m)["Upsample"] = ResizeRule;
    (*m)["DepthToSpace"] = DepthToSpaceRule;
    (*m)["SpaceToDepth"] = DepthToSpaceRule;
    for (const char* op : {"LSTM", "GRU", "RNN"}) (*m)[op] = RecurrentRule;
    (*m)["NonZero"] = NonZeroRule;
    (*m)["EyeLike"] = EyeLikeRule;
    (*m)["Bernoulli"] = BernoulliRule;
    (*m)["If"] = IfRule;
    (*m)["NonMaxSuppression"] = NonMaxSuppressionRule;
    (*m)["Compress"] = CompressRule;
    (*m)["Unique"] = UniqueRule;
    (*m)["OneHot"] = OneHotRule;
    (*m)["GridSample"] = GridSampleRule;
    (*m)["RoiAlign"] = RoiAlignRule;
    (*m)["Det"] = DetRule;
    for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
      (*m)[op] = WindowRule;
    }
    for (const char* op : {"RandomUniformLike", "RandomNormalLike"}) {
      (*m)[op] = RandomLikeRule;
    }
    for (const char* op : {"RandomUniform", "RandomNormal"}) {
      (*m)[op] = RandomRule;
    }
    for (const char* op :
         {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"}) {
      (*m)[op] = LossRule;
    }
    (*m)["MaxUnpool"] = MaxUnpoolRule;
    (*m)["Loop"] = LoopRule;
    return m;
  }();
  return *rules;
}

}  // namespace

const ShapeRule* FindShapeRule(const std::string& op_type) {
  auto it = Rules().find(op_type);
  return it == Rules().end() ? nullptr : &it->second;
}

}  // namespace shape_internal
}  // namespace quantd
