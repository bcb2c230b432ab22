// Resource figures of a quantized graph (MCT's RU metrics, mct-reference
// §1.4): weights memory = sum over quantized weights of #params * bits / 8;
// activation memory = the largest sum of live quantized activation tensors
// (size * bits / 8) over the model's topological schedule (MCT takes the max
// over memory-graph cuts; the schedule's cuts are a subset, so this can be
// below MCT's figure for branchy graphs); total = weights + activation;
// BOPs = MACs * weight bits * input activation bits of every linear node
// (float = 32 bits). Tensor sizes come from the shapes seen on the first
// calibration sample.
#ifndef QUANTD_CORE_PIPELINE_RESOURCE_UTILIZATION_H_
#define QUANTD_CORE_PIPELINE_RESOURCE_UTILIZATION_H_

#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/report/report.h"
#include "quantd/v1/job.pb.h"
#include "quantd/v1/quantized_graph.pb.h"

namespace quantd {

// `override_bits` > 0 replaces every quantized bit width (the 8-bit
// baseline uses 8).
ResourceFigures ComputeResourceUtilization(
    const Model& model, const v1::QuantizedGraph& graph,
    const std::map<std::string, std::vector<int64_t>>& shapes,
    int override_bits = 0);

v1::ResourceUtilization ToProto(const ResourceFigures& f);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_RESOURCE_UTILIZATION_H_
