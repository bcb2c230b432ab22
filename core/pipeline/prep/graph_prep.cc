// Graph preparation (MCT's prepare-graph and pre-statistics substitutions).
#include "core/pipeline/prep/graph_prep.h"

#include "absl/strings/str_cat.h"
#include "core/graph/opset_upgrade.h"
#include "core/graph/shape_inference.h"
#include "core/graph/transforms.h"
#include "core/pipeline/prep/channel_equalization.h"
#include "core/pipeline/prep/dynamic_shapes.h"
#include "core/pipeline/prep/hard_swish_fusion.h"
#include "core/util/status_macros.h"

namespace quantd {

absl::Status UpgradeForQdq(int64_t opset, Model* model) {
  return UpgradeOpset(model, opset);
}

absl::Status PrepareGraph(
    const PtqOptions& options,
    const std::map<std::string, std::vector<int64_t>>& input_shapes,
    Model* model, std::vector<std::string>* warnings) {
  if (model->DefaultOpset() < 13) {
    const int64_t from = model->DefaultOpset();
    RETURN_IF_ERROR(UpgradeOpset(model, 13));
    warnings->push_back(
        absl::StrCat("model upgraded from opset ", from, " to 13"));
  }
  // Folding keeps what depends on a dynamic dimension (dynamic_shapes.h),
  // unless the graph cannot run at other sizes of it anyway.
  ConstantFoldingOptions folding;
  ShapeInferenceResult probed;
  const InputShapes probe = ProbeShapes(model->graph.inputs, input_shapes);
  if (!probe.empty()) {
    Model copy = *model;
    ShapeInferenceOptions probe_options;
    probe_options.input_shapes = probe;
    auto result = InferShapes(&copy, probe_options);
    if (result.ok()) {
      probed = *std::move(result);
      folding.probe_constants = &probed.constants;
    } else {
      warnings->push_back(absl::StrCat(
          "dynamic input dimensions are fixed to the samples' sizes: the "
          "graph does not infer at other sizes: ",
          result.status().message()));
    }
  }
  ShapeInferenceOptions shape_options;
  shape_options.input_shapes = input_shapes;
  ASSIGN_OR_RETURN(ShapeInferenceResult shapes,
                   InferShapes(model, shape_options));
  RETURN_IF_ERROR(FoldConstants(model, folding));
  RETURN_IF_ERROR(RemoveIdentities(model));
  if (options.activation_channel_equalization) {
    // Before folding: the BatchNorms are the prior MCT equalizes from.
    ASSIGN_OR_RETURN(int n, EqualizeActivationChannels(model));
    warnings->push_back(absl::StrCat(
        n,
        " Conv -> BatchNorm -> ReLU -> Conv pair(s) channel-equalized "
        "(activation_channel_equalization)"));
  }
  RETURN_IF_ERROR(FoldBatchNorms(model));
  RETURN_IF_ERROR(FoldBatchNormsForward(model));
  ASSIGN_OR_RETURN(int gemms, FuseMatMulAdd(model));
  if (gemms > 0) {
    warnings->push_back(absl::StrCat(
        gemms,
        " MatMul + bias Add pair(s) fused into Gemm (one Linear layer)"));
  }
  ASSIGN_OR_RETURN(int hard_swishes, FuseHardSwish(model));
  if (hard_swishes > 0) {
    warnings->push_back(absl::StrCat(
        hard_swishes, " decomposed hard-swish(es) fused into HardSwish"));
  }
  if (options.relu_bound_to_power_of_2) {
    ASSIGN_OR_RETURN(int n, ReluBoundToPowerOfTwo(model));
    if (n > 0) {
      RemoveUnusedInitializers(&model->graph);
      warnings->push_back(
          absl::StrCat(n,
                       " bounded ReLU(s) rescaled to a power-of-two bound "
                       "(relu_bound_to_power_of_2)"));
    }
  }
  if (options.linear_collapsing) {
    ASSIGN_OR_RETURN(int n, CollapseLinear(model));
    (void)n;
  }
  if (options.residual_collapsing) {
    ASSIGN_OR_RETURN(int n, CollapseResidual(model));
    (void)n;
  }
  ASSIGN_OR_RETURN(shapes, InferShapes(model, shape_options));
  for (const std::string& label : shapes.unsupported) {
    warnings->push_back(absl::StrCat(label, ": no shape rule"));
  }
  return absl::OkStatus();
}

}  // namespace quantd
