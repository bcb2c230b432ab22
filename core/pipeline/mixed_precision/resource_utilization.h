// Resource figures of the job's decisions for the report and QuantizeResult
// (MCT's RU metrics, mct-reference §1.4), computed by the mixed-precision
// resource calculator (mixed_precision_resources.h, which documents the
// exact definitions: weights memory, activation memory as the max over the
// memory cuts of the topological schedule, total, BOPs, SIMD padding).
// Tensor sizes come from the shapes seen on the first calibration sample.
#ifndef QUANTD_CORE_PIPELINE_MIXED_PRECISION_RESOURCE_UTILIZATION_H_
#define QUANTD_CORE_PIPELINE_MIXED_PRECISION_RESOURCE_UTILIZATION_H_

#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/mixed_precision/resource_figures.h"
#include "core/pipeline/job/job_state.h"
#include "quantd/v1/job.pb.h"

namespace quantd {

// `override_bits` > 0 replaces every quantized bit width (the 8-bit
// baseline uses 8). `simd_padding` is the TPC's is_simd_padding: kernels'
// output channels are padded to the node config's simd_size.
mixed_precision::ResourceFigures ComputeResourceUtilization(
    const JobState& state,
    const std::map<std::string, std::vector<int64_t>>& shapes,
    int override_bits = 0, bool simd_padding = false);

v1::ResourceUtilization ToProto(const mixed_precision::ResourceFigures& f);

// One warning per target the final model exceeds. The search meets every
// target on the graph it sees, shift-negative correction's Add and Pad
// outputs included (it runs before the search); what follows the search
// (GPTQ, the quality target's bit upgrades) can still change the figures.
std::vector<std::string> TargetOverrunWarnings(
    const mixed_precision::ResourceFigures& achieved,
    const mixed_precision::ResourceFigures& targets);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_MIXED_PRECISION_RESOURCE_UTILIZATION_H_
