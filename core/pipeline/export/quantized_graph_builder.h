// The job's results -> the QuantizedGraph proto, the wire form of the
// decisions (every node with its op set, fused group, chosen configuration,
// activation and weight parameters, mixed-precision sensitivities and
// SQNR). Built once, at the end of a job, when everything is known.
#ifndef QUANTD_CORE_PIPELINE_EXPORT_QUANTIZED_GRAPH_BUILDER_H_
#define QUANTD_CORE_PIPELINE_EXPORT_QUANTIZED_GRAPH_BUILDER_H_

#include <map>
#include <string>
#include <vector>

#include "core/pipeline/job/job_state.h"
#include "core/qdq/quantization_params.h"
#include "quantd/v1/quantized_graph.pb.h"

namespace quantd {

// What the graph carries besides the job state (all optional).
struct QuantizedGraphExtras {
  std::string tpc;  // name@version
  std::string tpc_digest;
  // Node name -> sensitivity per candidate (mixed precision).
  const std::map<std::string, std::vector<double>>* candidate_sensitivity =
      nullptr;
  // Tensor -> SQNR of the fake-quant model against float, in dB; a node
  // carries its first output's (0 when not finite).
  const std::map<std::string, double>* tensor_sqnr_db = nullptr;
};

v1::QuantizedGraph BuildQuantizedGraph(const JobState& state,
                                       const QuantizedGraphExtras& extras);

// The wire form of one decision. Integer weights are stored in their
// `storage` type, little-endian, under the initializer's name.
v1::ActivationQuantization ToProto(const ActivationParams& a);
v1::WeightQuantization ToProto(const WeightParams& w);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_EXPORT_QUANTIZED_GRAPH_BUILDER_H_
