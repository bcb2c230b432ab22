#include "core/qdq/internal/export_util.h"

#include "absl/strings/str_cat.h"

namespace quantd::qdq_internal {

std::string NameTable::Unique(const std::string& base) {
  std::string name = base;
  for (int k = 1; used_.count(name) != 0; ++k) {
    name = absl::StrCat(base, "_", k);
  }
  used_.insert(name);
  return name;
}

void NameTable::AddGraph(const Graph& g) {
  for (const auto& in : g.inputs) used_.insert(in.name);
  for (const auto& out : g.outputs) used_.insert(out.name);
  for (const auto& [name, t] : g.initializers) used_.insert(name);
  for (const Node& n : g.nodes) {
    used_.insert(n.name);
    for (const auto& o : n.outputs) used_.insert(o);
    for (const auto& i : n.inputs) used_.insert(i);
    for (const auto& [key, a] : n.attributes) {
      if (a.g) AddGraph(*a.g);
    }
  }
}

Attribute IntAttr(int64_t v) {
  Attribute a;
  a.type = Attribute::Type::kInt;
  a.i = v;
  return a;
}

Attribute FloatAttr(double v) {
  Attribute a;
  a.type = Attribute::Type::kFloat;
  a.f = static_cast<float>(v);
  return a;
}

Attribute StringAttr(absl::string_view v) {
  Attribute a;
  a.type = Attribute::Type::kString;
  a.s = std::string(v);
  return a;
}

}  // namespace quantd::qdq_internal
