// Node filters of a job (keep_float, bit-width overrides): which nodes an
// option names, whether a node matches, and the filter as users write it
// (`type:Conv`, `name:conv_3`, `scope:backbone`) for warnings.
#ifndef QUANTD_CORE_PIPELINE_PREP_NODE_FILTER_H_
#define QUANTD_CORE_PIPELINE_PREP_NODE_FILTER_H_

#include <string>

#include "core/graph/graph.h"

namespace quantd {

struct NodeFilter {
  enum class By { kNone, kType, kName, kScope };
  By by = By::kNone;
  // The ONNX op type, the exact node name, or a substring of the name.
  std::string value;
};

bool MatchesNodeFilter(const NodeFilter& filter, const Node& node);

std::string NodeFilterText(const NodeFilter& filter);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_PREP_NODE_FILTER_H_
