// QdqPlan: what the QDQ exporter inserts into a float graph, in ONNX terms.
//
// The pipeline decides the quantization (MCT semantics: thresholds, ranges,
// LUTs) and lowers each decision to the affine form ONNX uses,
// q = saturate(round_half_even(x / scale) + zero_point), before export. The
// same plan drives quantd's own fake-quant execution (fake_quant.h), so the
// QDQ model and the fake-quant run compute the same values by construction.
#ifndef QUANTD_CORE_QDQ_QDQ_PLAN_H_
#define QUANTD_CORE_QDQ_QDQ_PLAN_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/graph/tensor.h"

namespace quantd {

// Integer storage of a quantized tensor: kInt8/kUint8, kInt16/kUint16,
// kInt4/kUint4 (also used for 2-bit grids), kInt32 (bias only).
struct QdqStorage {
  DType dtype = DType::kUint8;
  // The integer range actually used, e.g. [0, 255] or [-128, 127]; narrower
  // than the dtype for sub-byte grids stored in a wider type.
  int64_t qmin = 0;
  int64_t qmax = 255;
};

// One quantized activation tensor (graph input or node output): a single
// QuantizeLinear and one DequantizeLinear per consumer.
struct QdqActivation {
  std::string tensor;
  QdqStorage storage;
  float scale = 1.0f;
  int64_t zero_point = 0;
  // Consumers (node name -> {axis, channels}) whose DequantizeLinear repeats
  // the scale and zero point once per channel: the same values, which ONNX
  // Runtime neither fuses nor takes as a cue to quantize the consumer's
  // float weights (core/pipeline/export/float_weight_guard.h).
  std::map<std::string, std::pair<int, int64_t>> per_channel_consumers;
};

// A constant input of one node, stored as integers behind a
// DequantizeLinear (or as LUT indices behind Cast -> Gather -> Mul).
struct QdqWeight {
  std::string node;  // consumer node name
  int input_index = 0;
  QdqStorage storage;
  int axis = -1;                     // per-axis when >= 0
  std::vector<float> scales;         // one per channel, or one
  std::vector<int64_t> zero_points;  // same length as scales, or empty (0)
  // The integers, shaped like the float weight (int32 holds any storage).
  Tensor int_values;
  // LUT form: when non-empty, int_values are indices into `codebook`, and the
  // weight is codebook[index] * scales[channel] (codebook on the int8 grid,
  // divided by 2^7, as MCT's LUT quantizers define it).
  std::vector<float> codebook;
};

struct QdqPlan {
  std::vector<QdqActivation> activations;
  std::vector<QdqWeight> weights;
  // Free-form metadata_props added to the model (sorted by key on export).
  std::vector<std::pair<std::string, std::string>> metadata;
};

}  // namespace quantd

#endif  // QUANTD_CORE_QDQ_QDQ_PLAN_H_
