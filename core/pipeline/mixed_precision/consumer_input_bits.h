// The widest activation a node's output may take: every consumer (through
// quantization-preserving consumers) must accept it as input (the TPC's
// supported_input_activation_n_bits). Shared by attach's input-bits filter
// rule, the mixed-precision candidate filter and the quality-target search.
#ifndef QUANTD_CORE_PIPELINE_MIXED_PRECISION_CONSUMER_INPUT_BITS_H_
#define QUANTD_CORE_PIPELINE_MIXED_PRECISION_CONSUMER_INPUT_BITS_H_

#include <vector>

#include "core/graph/graph.h"
#include "core/graph/graph_index.h"
#include "core/pipeline/job/job_state.h"

namespace quantd {

// Largest activation bits every consumer of node `i` accepts; 1 << 30 when
// nothing consumes it.
int ConsumerInputLimit(const Graph& g, const GraphIndex& index,
                       const std::vector<NodePlan>& plans, int i);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_MIXED_PRECISION_CONSUMER_INPUT_BITS_H_
