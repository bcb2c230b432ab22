#include "core/pipeline/prep/node_filter.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace quantd {

bool MatchesNodeFilter(const NodeFilter& filter, const Node& node) {
  switch (filter.by) {
    case NodeFilter::By::kType:
      return node.op_type == filter.value;
    case NodeFilter::By::kName:
      return node.name == filter.value;
    case NodeFilter::By::kScope:
      return absl::StrContains(node.name, filter.value);
    case NodeFilter::By::kNone:
      return false;
  }
  return false;
}

std::string NodeFilterText(const NodeFilter& filter) {
  switch (filter.by) {
    case NodeFilter::By::kType:
      return absl::StrCat("type:", filter.value);
    case NodeFilter::By::kName:
      return absl::StrCat("name:", filter.value);
    case NodeFilter::By::kScope:
      return absl::StrCat("scope:", filter.value);
    case NodeFilter::By::kNone:
      return "no filter";
  }
  return "no filter";
}

}  // namespace quantd
