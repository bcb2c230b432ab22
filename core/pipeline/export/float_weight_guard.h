// Keeps float weights float in ONNX Runtime.
//
// ONNX Runtime's WeightBiasQuantization transformer (on from its basic
// optimization level, so at its default) rewrites every Conv, ConvTranspose
// and Gemm whose input comes from a per-tensor DequantizeLinear and whose
// output reaches a QuantizeLinear (through single-consumer Relu/Clip only):
// a float weight initializer becomes per-tensor symmetric int8. A TPC that
// leaves such weights float (tflite's and qnnpack's Conv) then runs on
// weights the TPC never allowed: ppocr_rec's depthwise convolutions lose
// everything (CER 1.0 at ORT's default level, 0.24 with optimizations off).
//
// The DequantizeLinear that feeds such a node repeats its scale and zero
// point once per input channel (same values, so the same numbers): the
// transformer requires a scalar scale and passes the node by, and so does
// ORT's QDQ fusion, which leaves a float Conv on dequantized inputs and
// float weights, as the TPC says. (An int32 DequantizeLinear on the weight
// does not work: ORT then fuses it into a QLinearConv it cannot load.)
#ifndef QUANTD_CORE_PIPELINE_EXPORT_FLOAT_WEIGHT_GUARD_H_
#define QUANTD_CORE_PIPELINE_EXPORT_FLOAT_WEIGHT_GUARD_H_

#include "core/graph/graph.h"
#include "core/qdq/qdq_plan.h"

namespace quantd {

// Marks, in `plan`'s activations, the DequantizeLinear of each Conv,
// ConvTranspose or Gemm that ONNX Runtime would give int8 weights to: a
// float weight initializer `plan` leaves float, input 0 quantized, the
// output reaching a quantized tensor through single-consumer Relu/Clip.
void GuardFloatWeights(const Graph& graph, QdqPlan* plan);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_EXPORT_FLOAT_WEIGHT_GUARD_H_
