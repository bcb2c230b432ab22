// Lowers a QuantizedGraph (MCT terms) to a QdqPlan (ONNX Q/DQ terms) for a
// float model: activation storage per ExportOptions, weights as integers with
// float32 scales, LUT weights as indices + codebook (or snapped to int8), and
// int32 biases for Conv/Gemm whose input and kernel are quantized. Both the
// QDQ export and quantd's fake-quant execution use this plan, so they agree.
#ifndef QUANTD_CORE_PIPELINE_EXPORT_QDQ_LOWERING_H_
#define QUANTD_CORE_PIPELINE_EXPORT_QDQ_LOWERING_H_

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/qdq/qdq_plan.h"
#include "quantd/v1/job.pb.h"
#include "quantd/v1/quantized_graph.pb.h"

namespace quantd {

absl::StatusOr<QdqPlan> LowerToQdqPlan(const Model& model,
                                       const v1::QuantizedGraph& graph,
                                       const v1::ExportOptions& options);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_EXPORT_QDQ_LOWERING_H_
