// Layer-by-layer check that an exported QDQ model computes what quantd's
// fake-quant execution of the same plan computes.
//
// End to end, two float executors cannot agree to one quantization step on a
// deep quantized network: their convolutions sum in different orders, so a
// value that lands within an ulp of a rounding boundary (often exactly on a
// tie, since dequantized operands are short dyadic numbers) rounds one way
// in ONNX Runtime and the other way in quantd, and every later requantization
// amplifies the flip (docs/pipeline.md measures it on ppocr_cls). So each
// quantized tensor is compared given the SAME inputs: quantd's executor runs
// with every planned activation forced to ORT's integers for it ("teacher
// forcing"), and the integers quantd computes for a tensor must be within
// one step of ORT's on every element.
#ifndef QUANTD_TESTS_E2E_PTQ_QDQ_LAYERWISE_H_
#define QUANTD_TESTS_E2E_PTQ_QDQ_LAYERWISE_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/io/sample_set.h"
#include "core/qdq/qdq_plan.h"

namespace quantd {

// Planned activation tensor -> the output of its QuantizeLinear in the QDQ
// model (the integers). A planned tensor without one is an error naming it.
absl::StatusOr<std::map<std::string, std::string>> QuantizedTensorNames(
    const std::string& qdq_onnx, const QdqPlan& plan);

// The QDQ model with the `names` values as its only graph outputs.
absl::StatusOr<std::string> WithQuantizedOutputs(
    const std::string& qdq_onnx,
    const std::map<std::string, std::string>& names);

struct LayerwiseComparison {
  int64_t elements = 0;    // integers compared
  int64_t one_step = 0;    // differing by exactly one step
  int64_t beyond_one = 0;  // differing by more
  int64_t worst_steps = 0;
  std::string worst_tensor;
};

// Runs `fq_model` (WithFakeQuantWeights of the prepared model) on `inputs`
// with every planned activation replaced by ORT's dequantized integers from
// `ort_quantized` (one sample set holding the QuantizedTensorNames outputs),
// comparing quantd's own integers for each tensor with ORT's first.
absl::StatusOr<LayerwiseComparison> CompareLayerwise(
    const Model& fq_model, const QdqPlan& plan,
    const std::map<std::string, std::string>& quantized_names,
    const SampleSet& inputs, const SampleSet& ort_quantized);

}  // namespace quantd

#endif  // QUANTD_TESTS_E2E_PTQ_QDQ_LAYERWISE_H_
