// Shape rules of ONNX nn ops (onnx/defs/nn): convolution, pooling,
// normalization, dropout, flatten.
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/graph/shape_rules/families.h"
#include "core/graph/shape_rules/helpers.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace shape_internal {
namespace {

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

}  // namespace

void AddNnRules(RuleTable* m) {
  for (const char* op :
       {"LRN", "InstanceNormalization", "MeanVarianceNormalization",
        "GroupNormalization", "LpNormalization"}) {
    (*m)[op] = UnaryRule;
  }
  (*m)["Dropout"] = DropoutRule;
  (*m)["BatchNormalization"] = BatchNormRule;
  (*m)["LayerNormalization"] = LayerNormRule;
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
  (*m)["Flatten"] = FlattenRule;
  (*m)["MaxUnpool"] = MaxUnpoolRule;
}

}  // namespace shape_internal
}  // namespace quantd
