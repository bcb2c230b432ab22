// The quantization decided for one tensor, in MCT's terms (method,
// threshold or range, bits) together with the affine form every method
// reduces to. These are the engine's own results: parameter selection fills
// them, the corrections, mixed precision and GPTQ refine them, and export
// turns them into the QdqPlan (ONNX terms), the MCTQ model and the
// QuantizedGraph proto (the wire form, built once at the end of a job).
#ifndef QUANTD_CORE_QDQ_QUANTIZATION_PARAMS_H_
#define QUANTD_CORE_QDQ_QUANTIZATION_PARAMS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/tensor.h"
#include "quantd/v1/tpc.pb.h"

namespace quantd {

// One quantized activation tensor (a graph input or a node output).
struct ActivationParams {
  std::string tensor;
  v1::QuantizationMethod method = v1::QUANTIZATION_METHOD_POWER_OF_TWO;
  int n_bits = 0;
  bool is_signed = false;
  // POWER_OF_TWO / SYMMETRIC / LUT_POT: the threshold T.
  double threshold = 0;
  // UNIFORM: the range (after the zero-inclusion fix).
  double range_min = 0;
  double range_max = 0;
  // q = round(x / scale) + zero_point.
  double scale = 0;
  int64_t zero_point = 0;
  // LUT_POT: the centroids on the integer grid.
  std::vector<float> lut_values;
  // The tensor whose parameters this one reuses (quantization preserving);
  // empty when selected for this tensor.
  std::string preserved_from;
};

// One quantized constant input of a node (kernel, bias, constant operand).
struct WeightParams {
  std::string attr;  // "kernel_attr", "bias_attr", "pos_attr"
  int input_index = 0;
  std::string tensor;  // initializer name
  v1::QuantizationMethod method = v1::QUANTIZATION_METHOD_POWER_OF_TWO;
  int n_bits = 0;
  bool per_channel = false;
  int channel_axis = -1;  // -1 when per tensor
  // One entry per channel (one when per tensor).
  std::vector<double> thresholds;  // POT / SYMMETRIC / LUT scale T
  std::vector<double> range_min;   // UNIFORM
  std::vector<double> range_max;   // UNIFORM
  std::vector<double> scales;
  std::vector<int64_t> zero_points;
  // The integers on the grid (or LUT indices), kInt32, shaped like the
  // float weight; `storage` is the integer type the wire form stores them
  // in (kInt8, kUint8, kInt16, kUint16).
  Tensor int_values;
  DType storage = DType::kInt8;
  // LUT methods: the codebook on the int8 grid (value = lut / 2^7 * T).
  std::vector<float> lut_values;
};

// Views of the decisions for a model (no copies), what the QDQ lowering and
// the MCTQ export read: graph inputs' activations, then per node its output
// activations and its weights, in graph order.
struct NodeQuantization {
  std::string node;  // node name in the model being exported
  std::vector<const ActivationParams*> activations;
  const std::vector<WeightParams>* weights = nullptr;  // null: none
};

struct ModelQuantization {
  std::vector<const ActivationParams*> inputs;
  std::vector<NodeQuantization> nodes;
};

}  // namespace quantd

#endif  // QUANTD_CORE_QDQ_QUANTIZATION_PARAMS_H_
