// quantd's own fake-quant execution of a quantization plan: the float model
// with weights replaced by their dequantized values and every planned
// activation passed through quantize -> dequantize (qdq_math.h), exactly the
// arithmetic of the exported QDQ model. Used for the report's error figures
// and as the reference the QDQ export is checked against.
#ifndef QUANTD_CORE_PIPELINE_EXPORT_FAKE_QUANT_H_
#define QUANTD_CORE_PIPELINE_EXPORT_FAKE_QUANT_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "core/executor/executor.h"
#include "core/graph/graph.h"
#include "core/qdq/qdq_plan.h"

namespace quantd {

// The dequantized float value of one planned weight (shape of int_values).
absl::StatusOr<Tensor> DequantizeWeight(const QdqWeight& weight);

// A copy of `model` whose planned weights hold their dequantized values. A
// weight initializer shared by nodes that quantize it differently is split
// into one initializer per node.
absl::StatusOr<Model> WithFakeQuantWeights(const Model& model,
                                           const QdqPlan& plan);

// Fake-quantizes the planned activations of node outputs (a rewriter for
// Executor::Run) and of graph inputs (FakeQuantizeFeeds).
class ActivationFakeQuantizer {
 public:
  explicit ActivationFakeQuantizer(const QdqPlan& plan);
  // The rewriter refers to this object.
  ActivationFakeQuantizer(const ActivationFakeQuantizer&) = delete;
  ActivationFakeQuantizer& operator=(const ActivationFakeQuantizer&) = delete;
  const TensorRewriter& rewriter() const { return rewriter_; }
  std::map<std::string, Tensor> FakeQuantizeFeeds(
      const std::map<std::string, Tensor>& feeds) const;

 private:
  std::map<std::string, QdqActivation> by_tensor_;
  TensorRewriter rewriter_;
};

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_EXPORT_FAKE_QUANT_H_
