// QDQ export: a float graph-IR Model + a QdqPlan -> the QDQ Model that ONNX
// Runtime runs (serialize it with ExportOnnx).
//
// Placement follows ONNX Runtime's QDQ fusion rules (onnx-reference §1.8,
// §5.3): one QuantizeLinear per quantized tensor and one DequantizeLinear per
// consuming node (a DQ feeds exactly one node); constant weights become
// integer initializers behind a lone per-axis DQ; int32 bias behind a DQ
// without zero point; a quantized graph output keeps its name (the producer's
// float tensor is renamed) so the QDQ model's interface equals the float
// model's. LUT weights are packed indices -> Cast -> Gather(codebook) -> Mul
// by the per-channel scale. Node order stays topological; names are
// deterministic, so the same plan gives the same bytes.
#ifndef QUANTD_CORE_QDQ_QDQ_EXPORT_H_
#define QUANTD_CORE_QDQ_QDQ_EXPORT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/qdq/qdq_plan.h"

namespace quantd {

// Lowest default-domain opset that can hold every tensor of the plan (13 for
// 8-bit/int32 storage, 21 for 4- and 16-bit; LUT indices need 13 when
// stored as uint8).
int64_t RequiredQdqOpset(const QdqPlan& plan);

// The model must already be at an opset >= RequiredQdqOpset(plan) (the
// pipeline upgrades it first): FAILED_PRECONDITION otherwise. A plan entry
// naming an unknown tensor/node/input is INVALID_ARGUMENT naming it.
absl::StatusOr<Model> BuildQdqModel(const Model& float_model,
                                    const QdqPlan& plan);

}  // namespace quantd

#endif  // QUANTD_CORE_QDQ_QDQ_EXPORT_H_
