// Lowers the job's quantization decisions (MCT terms, quantization_params.h)
// to a QdqPlan (ONNX Q/DQ terms) for a float graph: activation storage per
// ExportOptions, weights as integers with float32 scales, LUT weights as
// indices + codebook (or snapped to int8), and int32 biases for Conv/Gemm
// whose input and kernel are quantized. Both the QDQ export and quantd's
// fake-quant execution use this plan, so they agree. The plan's metadata is
// left to the caller.
#ifndef QUANTD_CORE_PIPELINE_EXPORT_QDQ_LOWERING_H_
#define QUANTD_CORE_PIPELINE_EXPORT_QDQ_LOWERING_H_

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/pipeline/export/export_options.h"
#include "core/pipeline/job/job_state.h"
#include "core/qdq/qdq_plan.h"
#include "core/qdq/quantization_params.h"
#include "quantd/v1/job.pb.h"

namespace quantd {

// Views of every decision of the job state, in graph order.
ModelQuantization QuantizationOf(const JobState& state);

// The decisions of `quantization` for the nodes and initializers of `graph`
// (INVALID_ARGUMENT naming a node or input that is not there).
absl::StatusOr<QdqPlan> LowerToQdqPlan(const Graph& graph,
                                       const ModelQuantization& quantization,
                                       const ExportOptions& options);

// Every decision of the job state.
absl::StatusOr<QdqPlan> LowerToQdqPlan(const JobState& state,
                                       const ExportOptions& options);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_EXPORT_QDQ_LOWERING_H_
