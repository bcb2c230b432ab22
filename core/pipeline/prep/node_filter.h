// Node filters of a request (keep_float, bit-width overrides): whether a
// node matches, and the filter as users write it (`type:Conv`,
// `name:conv_3`, `scope:backbone`) for warnings.
#ifndef QUANTD_CORE_PIPELINE_PREP_NODE_FILTER_H_
#define QUANTD_CORE_PIPELINE_PREP_NODE_FILTER_H_

#include <string>

#include "core/graph/graph.h"
#include "quantd/v1/job.pb.h"

namespace quantd {

bool MatchesNodeFilter(const v1::NodeFilter& filter, const Node& node);

std::string NodeFilterText(const v1::NodeFilter& filter);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_PREP_NODE_FILTER_H_
