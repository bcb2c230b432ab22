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
//
// With one input channel that scale has one element, which ORT takes as
// per-tensor (its IsScalar accepts shape [1]). PlaceSingleChannelGuards then
// puts the per-axis scale on another axis of the input whose size is static
// and > 1 (a spatial one for a Conv, the rows for a Gemm): the same values
// again, legal for every runtime, and ORT passes the node by. A dimension
// counts as static only if the declared (dynamic) model inputs fix it.
#ifndef QUANTD_CORE_PIPELINE_EXPORT_FLOAT_WEIGHT_GUARD_H_
#define QUANTD_CORE_PIPELINE_EXPORT_FLOAT_WEIGHT_GUARD_H_

#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/qdq/qdq_plan.h"

namespace quantd {

// Marks, in `plan`'s activations, the DequantizeLinear of each Conv,
// ConvTranspose or Gemm that ONNX Runtime would give int8 weights to: a
// float weight initializer `plan` leaves float, input 0 quantized, the
// output reaching a quantized tensor through single-consumer Relu/Clip.
void GuardFloatWeights(const Graph& graph, QdqPlan* plan);

// Moves each guard of `plan` whose axis has one element to an axis of size
// > 1 that is the same whatever the dynamic dimensions of
// `declared_inputs` (the float model's inputs; `model`'s may be bound to the
// samples' shapes). Returns a warning per guard left on its one-element
// axis (no such dimension, or shapes not inferred): ORT's default level
// then still gives that node per-tensor int8 weights.
std::vector<std::string> PlaceSingleChannelGuards(
    const Model& model, const std::vector<ValueInfo>& declared_inputs,
    QdqPlan* plan);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_EXPORT_FLOAT_WEIGHT_GUARD_H_
