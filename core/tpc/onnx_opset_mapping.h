// Attaching a TPC to ONNX (MCT's AttachTpcToPytorch/Keras +
// FrameworkQuantizationCapabilities + fetch_qc_options_for_node).
//
// DefaultOnnxOpsetMapping() maps every OperatorSetNames entry to ONNX op
// types, with layer filters where the op set is a subset of an op type
// (docs/tpc.md has the table). A request may supply its own entries
// (OpsetLayerMapping), which replace the default for those op sets.
//
//   ASSIGN_OR_RETURN(OnnxTpcAttachment att, OnnxTpcAttachment::Create(tpc));
//   ASSIGN_OR_RETURN(AttachedOp a, att.Attach(op_view));
//   a.qco->base_config() ...; WeightConfigForInput(a, config, 1) ...
#ifndef QUANTD_CORE_TPC_ONNX_OPSET_MAPPING_H_
#define QUANTD_CORE_TPC_ONNX_OPSET_MAPPING_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tpc/op_view.h"
#include "quantd/v1/tpc.pb.h"

namespace quantd::tpc {

// The built-in op set -> ONNX mapping. Op sets with no ONNX counterpart
// (e.g. "SSDPostProcess") have an entry with no layers.
const quantd::v1::OpsetLayerMapping& DefaultOnnxOpsetMapping();

struct AttachedOp {
  // Empty when no op set matched: the TPC's default_qco applies.
  std::string op_set;
  // Never null; points into `tpc`, which this keeps alive.
  const quantd::v1::QuantizationConfigOptions* qco = nullptr;
  std::shared_ptr<const quantd::v1::TargetPlatformCapabilities> tpc;
  // Generic weight attribute ("kernel_attr", "bias_attr") -> ONNX input
  // index, for this op set.
  std::map<std::string, int> attr_inputs;
};

// The config for constant input `input_index` of a node under `config`:
// the mapped generic attribute's config if `config` has one, else a
// "pos_attr" config if present, else default_weight_attr_config (MCT's
// rules for named and positional weights).
const quantd::v1::AttributeQuantizationConfig& WeightConfigForInput(
    const AttachedOp& op, const quantd::v1::OpQuantizationConfig& config,
    int input_index);

class OnnxTpcAttachment {
 public:
  // Errors: an op set of the TPC that neither `custom` nor the default
  // mapping knows; an identical layer listed under two op sets; a malformed
  // custom filter or attr_mapping.
  static absl::StatusOr<OnnxTpcAttachment> Create(
      std::shared_ptr<const quantd::v1::TargetPlatformCapabilities> tpc,
      const quantd::v1::OpsetLayerMapping* custom = nullptr);

  // The op set and options of a node. A filter match beats a plain type
  // match; two op sets matching at the same level is INVALID_ARGUMENT naming
  // the node and both op sets.
  absl::StatusOr<AttachedOp> Attach(const OpView& op) const;

  const quantd::v1::TargetPlatformCapabilities& tpc() const { return *tpc_; }

 private:
  struct Layer {
    quantd::v1::LayerFilter filter;
    int op_set_index;
  };
  struct OpSetInfo {
    std::string name;
    const quantd::v1::QuantizationConfigOptions* qco;
    std::map<std::string, int> attr_inputs;
  };

  std::shared_ptr<const quantd::v1::TargetPlatformCapabilities> tpc_;
  std::vector<OpSetInfo> op_sets_;
  // op_type -> layers (plain and filtered) of that type
  std::map<std::string, std::vector<Layer>> layers_;
};

}  // namespace quantd::tpc

#endif  // QUANTD_CORE_TPC_ONNX_OPSET_MAPPING_H_
