// Shape rules of ONNX tensor ops (onnx/defs/tensor) that reshape, reorder,
// join, cut or pad: Reshape, Transpose, (Un)Squeeze, Concat, Split, Slice, Pad,
// Expand, Tile.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/graph/constant_eval.h"
#include "core/graph/shape_rules/families.h"
#include "core/graph/shape_rules/helpers.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace shape_internal {
namespace {

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
        RETURN_IF_ERROR(CheckRank(*c, In(*c, 1)->shape[0]));
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
      RETURN_IF_ERROR(CheckRank(*c, r));
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

}  // namespace

void AddTensorReshapeRules(RuleTable* m) {
  (*m)["Reshape"] = ReshapeRule;
  (*m)["Transpose"] = TransposeRule;
  (*m)["Squeeze"] = SqueezeRule;
  (*m)["Unsqueeze"] = UnsqueezeRule;
  (*m)["Concat"] = ConcatRule;
  (*m)["Split"] = SplitRule;
  (*m)["Slice"] = SliceRule;
  (*m)["Pad"] = PadRule;
  (*m)["Expand"] = ExpandRule;
  (*m)["Tile"] = TileRule;
}

}  // namespace shape_internal
}  // namespace quantd
