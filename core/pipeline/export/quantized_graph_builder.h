// JobState -> the QuantizedGraph proto (every node with its op set, fused
// group, chosen configuration, activation and weight parameters).
#ifndef QUANTD_CORE_PIPELINE_EXPORT_QUANTIZED_GRAPH_BUILDER_H_
#define QUANTD_CORE_PIPELINE_EXPORT_QUANTIZED_GRAPH_BUILDER_H_

#include <string>

#include "core/pipeline/job/job_state.h"
#include "quantd/v1/quantized_graph.pb.h"

namespace quantd {

v1::QuantizedGraph BuildQuantizedGraph(const JobState& state,
                                       const std::string& tpc,
                                       const std::string& tpc_digest);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_EXPORT_QUANTIZED_GRAPH_BUILDER_H_
