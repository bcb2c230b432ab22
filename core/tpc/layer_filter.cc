#include "core/tpc/layer_filter.h"

#include <cmath>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace quantd::tpc {
namespace {

using quantd::v1::AttributeFilter;
using quantd::v1::LayerFilter;

std::optional<AttrValue> FilterOperand(const AttributeFilter& f,
                                       const OpView& op) {
  switch (f.value_case()) {
    case AttributeFilter::kIntValue:
      return f.int_value();
    case AttributeFilter::kFloatValue:
      return f.float_value();
    case AttributeFilter::kStringValue:
      return f.string_value();
    case AttributeFilter::kIntsValue:
      return std::vector<int64_t>(f.ints_value().values().begin(),
                                  f.ints_value().values().end());
    case AttributeFilter::kAttrRef:
      return FindAttribute(op, f.attr_ref());
    case AttributeFilter::VALUE_NOT_SET:
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<double> AsNumber(const AttrValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  // A one-element list acts as its element (ONNX often stores scalars so).
  if (const auto* l = std::get_if<std::vector<int64_t>>(&v);
      l && l->size() == 1) {
    return static_cast<double>((*l)[0]);
  }
  if (const auto* l = std::get_if<std::vector<double>>(&v);
      l && l->size() == 1) {
    return (*l)[0];
  }
  return std::nullopt;
}

std::optional<std::vector<double>> AsList(const AttrValue& v) {
  if (const auto* l = std::get_if<std::vector<int64_t>>(&v)) {
    return std::vector<double>(l->begin(), l->end());
  }
  if (const auto* l = std::get_if<std::vector<double>>(&v)) return *l;
  return std::nullopt;
}

// <0, 0, >0, or nullopt when the values do not compare.
std::optional<int> Compare(const AttrValue& a, const AttrValue& b) {
  if (auto x = AsNumber(a), y = AsNumber(b); x && y) {
    return *x < *y ? -1 : (*x > *y ? 1 : 0);
  }
  const auto* sa = std::get_if<std::string>(&a);
  const auto* sb = std::get_if<std::string>(&b);
  if (sa && sb) return sa->compare(*sb) < 0 ? -1 : (*sa == *sb ? 0 : 1);
  auto la = AsList(a), lb = AsList(b);
  if (la && lb) return *la == *lb ? 0 : (*la < *lb ? -1 : 1);
  return std::nullopt;
}

bool ContainsValue(const AttrValue& haystack, const AttrValue& needle) {
  if (const auto* s = std::get_if<std::string>(&haystack)) {
    const auto* n = std::get_if<std::string>(&needle);
    return n && absl::StrContains(*s, *n);
  }
  auto list = AsList(haystack);
  auto n = AsNumber(needle);
  if (!list || !n) return false;
  for (double x : *list) {
    if (x == *n) return true;
  }
  return false;
}

const char* OpSymbol(AttributeFilter::Op op) {
  switch (op) {
    case AttributeFilter::OP_EQ:
      return "==";
    case AttributeFilter::OP_NOT_EQ:
      return "!=";
    case AttributeFilter::OP_GREATER:
      return ">";
    case AttributeFilter::OP_GREATER_EQ:
      return ">=";
    case AttributeFilter::OP_SMALLER:
      return "<";
    case AttributeFilter::OP_SMALLER_EQ:
      return "<=";
    case AttributeFilter::OP_CONTAINS:
      return "contains";
    case AttributeFilter::OP_AND:
      return "&&";
    case AttributeFilter::OP_OR:
      return "||";
    default:
      return "?";
  }
}

std::string ToString(const AttributeFilter& f) {
  if (f.op() == AttributeFilter::OP_AND || f.op() == AttributeFilter::OP_OR) {
    std::vector<std::string> parts;
    for (const auto& c : f.children()) parts.push_back(ToString(c));
    return absl::StrCat(
        "(", absl::StrJoin(parts, absl::StrCat(" ", OpSymbol(f.op()), " ")),
        ")");
  }
  std::string value;
  if (f.value_case() == AttributeFilter::kAttrRef) {
    value = "$" + f.attr_ref();
  } else if (auto v = FilterOperand(f, OpView{})) {
    value = AttrValueToString(*v);
  }
  return absl::StrCat(f.attr(), " ", OpSymbol(f.op()), " ", value);
}

FilterValue MakeValue(const std::function<void(AttributeFilter&)>& set) {
  FilterValue v;
  set(v.value);
  return v;
}

AttributeFilter Leaf(const std::string& attr, AttributeFilter::Op op,
                     FilterValue v) {
  AttributeFilter f = std::move(v.value);
  f.set_attr(attr);
  f.set_op(op);
  return f;
}

}  // namespace

bool Matches(const AttributeFilter& f, const OpView& op) {
  switch (f.op()) {
    case AttributeFilter::OP_AND:
      for (const auto& c : f.children()) {
        if (!Matches(c, op)) return false;
      }
      return true;
    case AttributeFilter::OP_OR:
      for (const auto& c : f.children()) {
        if (Matches(c, op)) return true;
      }
      return false;
    case AttributeFilter::OP_UNSPECIFIED:
      return false;
    default:
      break;
  }
  std::optional<AttrValue> node_value = FindAttribute(op, f.attr());
  std::optional<AttrValue> operand = FilterOperand(f, op);
  if (!node_value || !operand) return false;
  if (f.op() == AttributeFilter::OP_CONTAINS) {
    return ContainsValue(*node_value, *operand);
  }
  std::optional<int> c = Compare(*node_value, *operand);
  if (!c) return f.op() == AttributeFilter::OP_NOT_EQ;
  switch (f.op()) {
    case AttributeFilter::OP_EQ:
      return *c == 0;
    case AttributeFilter::OP_NOT_EQ:
      return *c != 0;
    case AttributeFilter::OP_GREATER:
      return *c > 0;
    case AttributeFilter::OP_GREATER_EQ:
      return *c >= 0;
    case AttributeFilter::OP_SMALLER:
      return *c < 0;
    case AttributeFilter::OP_SMALLER_EQ:
      return *c <= 0;
    default:
      return false;
  }
}

bool Matches(const LayerFilter& filter, const OpView& op) {
  if (filter.op_type() != op.op_type) return false;
  for (const auto& c : filter.conditions()) {
    if (!Matches(c, op)) return false;
  }
  return true;
}

namespace {

absl::Status ValidateAttributeFilter(const AttributeFilter& f,
                                     const std::string& path) {
  if (f.op() == AttributeFilter::OP_AND || f.op() == AttributeFilter::OP_OR) {
    if (f.children().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": ", OpSymbol(f.op()), " without children"));
    }
    for (int i = 0; i < f.children_size(); ++i) {
      absl::Status s = ValidateAttributeFilter(
          f.children(i), absl::StrCat(path, ".children[", i, "]"));
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }
  if (!AttributeFilter::Op_IsValid(f.op()) ||
      f.op() == AttributeFilter::OP_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".op: not set"));
  }
  if (f.attr().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".attr: empty"));
  }
  if (f.value_case() == AttributeFilter::VALUE_NOT_SET) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".value: not set"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateLayerFilter(const LayerFilter& filter,
                                 const std::string& path) {
  if (filter.op_type().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".op_type: empty"));
  }
  for (int i = 0; i < filter.conditions_size(); ++i) {
    absl::Status s = ValidateAttributeFilter(
        filter.conditions(i), absl::StrCat(path, ".conditions[", i, "]"));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

std::string ToString(const LayerFilter& filter) {
  if (filter.conditions().empty()) return filter.op_type();
  std::vector<std::string> parts;
  for (const auto& c : filter.conditions()) parts.push_back(ToString(c));
  return absl::StrCat(filter.op_type(), "[", absl::StrJoin(parts, " && "), "]");
}

FilterValue Int(int64_t v) {
  return MakeValue([&](AttributeFilter& f) { f.set_int_value(v); });
}
FilterValue Float(double v) {
  return MakeValue([&](AttributeFilter& f) { f.set_float_value(v); });
}
FilterValue Str(const std::string& v) {
  return MakeValue([&](AttributeFilter& f) { f.set_string_value(v); });
}
FilterValue Ints(const std::vector<int64_t>& v) {
  return MakeValue([&](AttributeFilter& f) {
    for (int64_t x : v) f.mutable_ints_value()->add_values(x);
  });
}
FilterValue Ref(const std::string& attr) {
  return MakeValue([&](AttributeFilter& f) { f.set_attr_ref(attr); });
}

AttributeFilter Eq(const std::string& a, FilterValue v) {
  return Leaf(a, AttributeFilter::OP_EQ, std::move(v));
}
AttributeFilter NotEq(const std::string& a, FilterValue v) {
  return Leaf(a, AttributeFilter::OP_NOT_EQ, std::move(v));
}
AttributeFilter Greater(const std::string& a, FilterValue v) {
  return Leaf(a, AttributeFilter::OP_GREATER, std::move(v));
}
AttributeFilter GreaterEq(const std::string& a, FilterValue v) {
  return Leaf(a, AttributeFilter::OP_GREATER_EQ, std::move(v));
}
AttributeFilter Smaller(const std::string& a, FilterValue v) {
  return Leaf(a, AttributeFilter::OP_SMALLER, std::move(v));
}
AttributeFilter SmallerEq(const std::string& a, FilterValue v) {
  return Leaf(a, AttributeFilter::OP_SMALLER_EQ, std::move(v));
}
AttributeFilter Contains(const std::string& a, FilterValue v) {
  return Leaf(a, AttributeFilter::OP_CONTAINS, std::move(v));
}
AttributeFilter And(std::vector<AttributeFilter> c) {
  AttributeFilter f;
  f.set_op(AttributeFilter::OP_AND);
  for (auto& x : c) *f.add_children() = std::move(x);
  return f;
}
AttributeFilter Or(std::vector<AttributeFilter> c) {
  AttributeFilter f;
  f.set_op(AttributeFilter::OP_OR);
  for (auto& x : c) *f.add_children() = std::move(x);
  return f;
}

LayerFilter Filter(const std::string& op_type,
                   std::vector<AttributeFilter> conditions) {
  LayerFilter f;
  f.set_op_type(op_type);
  for (auto& c : conditions) *f.add_conditions() = std::move(c);
  return f;
}

}  // namespace quantd::tpc
