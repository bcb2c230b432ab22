// FrameworkInfo for ONNX (MCT's FrameworkInfo / default_framework_info.py):
// which ops carry a kernel and on which axes its channels lie, which ops are
// activations, which never have quantized outputs, and known output ranges
// (a range with both bounds makes the output "bounded": calibration then
// uses the no-clipping threshold search). Defaults are built in; a request
// may override them (FrameworkInfoOverride).
#ifndef QUANTD_CORE_TPC_FRAMEWORK_INFO_H_
#define QUANTD_CORE_TPC_FRAMEWORK_INFO_H_

#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "core/tpc/op_view.h"
#include "quantd/v1/tpc.pb.h"

namespace quantd::tpc {

struct KernelChannels {
  int weight_input = 1;  // ONNX input index of the weight
  int out_channel_axis = 0;
  int in_channel_axis = 1;
};

struct OutputRange {
  std::optional<double> min;
  std::optional<double> max;
  bool bounded() const { return min.has_value() && max.has_value(); }
};

class OnnxFrameworkInfo {
 public:
  // The built-in ONNX defaults.
  static const OnnxFrameworkInfo& Default();

  // Entries in `override` replace or add to the defaults.
  absl::Status ApplyOverride(const quantd::v1::FrameworkInfoOverride& o);

  // Weight channel axes of a kernel op; Gemm depends on transB. nullopt for
  // ops without a kernel.
  std::optional<KernelChannels> Kernel(const OpView& op) const;
  bool IsKernelOp(const std::string& op_type) const;
  bool IsActivationOp(const std::string& op_type) const;
  // Outputs are not float activations (indices, shapes, booleans).
  bool IsNoQuantizationOp(const std::string& op_type) const;
  std::optional<OutputRange> KnownOutputRange(const std::string& op_type) const;
  // Channel axis of an activation tensor: 1 (NCHW) for convolutions, -1 for
  // matrix products.
  int OutputChannelAxis(const std::string& op_type) const;

 private:
  std::map<std::string, KernelChannels> kernels_;
  std::set<std::string> activations_;
  std::set<std::string> no_quantization_;
  std::map<std::string, OutputRange> ranges_;
};

}  // namespace quantd::tpc

#endif  // QUANTD_CORE_TPC_FRAMEWORK_INFO_H_
