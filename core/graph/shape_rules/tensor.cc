// Shape rules of ONNX tensor ops (onnx/defs/tensor) that index, cast, select
// or resample: Cast, Where, Shape/Size, Gather*, Resize, DepthToSpace, NonZero,
// Compress, Unique, OneHot, GridSample. Reshaping ops: tensor_reshape.cc.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/graph/shape_rules/families.h"
#include "core/graph/shape_rules/helpers.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace shape_internal {
namespace {

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

absl::Status NonZeroRule(RuleContext* c) {
  if (HasRank(*c, 0)) {
    Set(c, 0, DType::kInt64,
        {static_cast<int64_t>(In(*c, 0)->shape.size()), -1});
  } else {
    Set(c, 0, DType::kInt64, {-1, -1});
  }
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

}  // namespace

void AddTensorRules(RuleTable* m) {
  for (const char* op : {"Identity", "Trilu", "ScatterElements", "ScatterND",
                         "Scatter", "ReverseSequence"}) {
    (*m)[op] = UnaryRule;
  }
  (*m)["Where"] = WhereRule;
  (*m)["Cast"] = CastRule;
  (*m)["CastLike"] = CastLikeRule;
  (*m)["Shape"] = ShapeOpRule;
  (*m)["Size"] = SizeRule;
  (*m)["Gather"] = GatherRule;
  (*m)["GatherElements"] = GatherElementsRule;
  (*m)["GatherND"] = GatherNDRule;
  (*m)["Resize"] = ResizeRule;
  (*m)["Upsample"] = ResizeRule;
  (*m)["DepthToSpace"] = DepthToSpaceRule;
  (*m)["SpaceToDepth"] = DepthToSpaceRule;
  (*m)["NonZero"] = NonZeroRule;
  (*m)["Compress"] = CompressRule;
  (*m)["Unique"] = UniqueRule;
  (*m)["OneHot"] = OneHotRule;
  (*m)["GridSample"] = GridSampleRule;
}

}  // namespace shape_internal
}  // namespace quantd
