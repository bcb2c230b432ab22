// Pieces both exporters (qdq_export.cc, mctq_export.cc) build graphs with.
#ifndef QUANTD_CORE_QDQ_INTERNAL_EXPORT_UTIL_H_
#define QUANTD_CORE_QDQ_INTERNAL_EXPORT_UTIL_H_

#include <cstdint>
#include <set>
#include <string>

#include "absl/strings/string_view.h"
#include "core/graph/graph.h"

namespace quantd::qdq_internal {

// Hands out tensor and node names that collide with nothing in the model
// (its subgraphs included) nor with names handed out before.
class NameTable {
 public:
  explicit NameTable(const Graph& graph) { AddGraph(graph); }

  // `base`, or `base_1`, `base_2`, ... if taken.
  std::string Unique(const std::string& base);

 private:
  void AddGraph(const Graph& g);
  std::set<std::string> used_;
};

Attribute IntAttr(int64_t v);
Attribute FloatAttr(double v);
Attribute StringAttr(absl::string_view v);

}  // namespace quantd::qdq_internal

#endif  // QUANTD_CORE_QDQ_INTERNAL_EXPORT_UTIL_H_
