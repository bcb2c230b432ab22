#include "core/pipeline/prep/node_filter.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace quantd {

bool MatchesNodeFilter(const v1::NodeFilter& filter, const Node& node) {
  switch (filter.filter_case()) {
    case v1::NodeFilter::kNodeType:
      return node.op_type == filter.node_type();
    case v1::NodeFilter::kNodeName:
      return node.name == filter.node_name();
    case v1::NodeFilter::kNameScope:
      return absl::StrContains(node.name, filter.name_scope());
    default:
      return false;
  }
}

std::string NodeFilterText(const v1::NodeFilter& filter) {
  switch (filter.filter_case()) {
    case v1::NodeFilter::kNodeType:
      return absl::StrCat("type:", filter.node_type());
    case v1::NodeFilter::kNodeName:
      return absl::StrCat("name:", filter.node_name());
    case v1::NodeFilter::kNameScope:
      return absl::StrCat("scope:", filter.name_scope());
    default:
      return "no filter";
  }
}

}  // namespace quantd
