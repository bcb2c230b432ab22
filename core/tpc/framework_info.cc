#include "core/tpc/framework_info.h"

#include <cmath>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"

namespace quantd::tpc {
namespace {

constexpr int kMaxKernelRank = 5;

OnnxFrameworkInfo* BuildDefault() {
  auto* info = new OnnxFrameworkInfo();
  quantd::v1::FrameworkInfoOverride d;
  const auto kernel = [&](const char* op, int out_axis, int in_axis) {
    auto* k = d.add_kernel_ops();
    k->set_op_type(op);
    k->set_weight_input(1);
    k->set_out_channel_axis(out_axis);
    k->set_in_channel_axis(in_axis);
  };
  kernel("Conv", 0, 1);           // W [M, C/group, k...]
  kernel("ConvTranspose", 1, 0);  // W [C, M/group, k...]
  kernel("Gemm", 1, 0);           // B [K, N]; transB=1 handled in Kernel()
  kernel("MatMul", 1, 0);         // B [K, N]
  const auto range = [&](const char* op, std::optional<double> lo,
                         std::optional<double> hi) {
    auto* r = d.add_activation_ranges();
    r->set_op_type(op);
    if (lo) r->set_min(*lo);
    if (hi) r->set_max(*hi);
  };
  // MCT's default_framework_info.py ranges, and exact ones for ONNX ops it
  // has no torch twin for.
  range("Sigmoid", 0.0, 1.0);
  range("Softmax", 0.0, 1.0);
  range("HardSigmoid", 0.0, 1.0);
  range("Tanh", -1.0, 1.0);
  range("Relu", 0.0, std::nullopt);
  range("Gelu", -0.17, std::nullopt);
  range("Selu", -1.76, std::nullopt);
  range("Elu", -1.0, std::nullopt);
  range("Softplus", 0.0, std::nullopt);
  range("HardSwish", -0.375, std::nullopt);  // min of x*relu6(x+3)/6 at -1.5
  for (const char* op :
       {"Shape", "Size", "Equal", "Greater", "Less", "GreaterOrEqual",
        "LessOrEqual", "Not", "And", "Or", "Xor", "ArgMax", "ArgMin", "NonZero",
        "NonMaxSuppression", "ConstantOfShape", "Range", "IsNaN", "IsInf"}) {
    d.add_no_quantization_ops(op);
  }
  if (!info->ApplyOverride(d).ok()) std::abort();  // our own table
  return info;
}

}  // namespace

const OnnxFrameworkInfo& OnnxFrameworkInfo::Default() {
  static const OnnxFrameworkInfo* info = BuildDefault();
  return *info;
}

absl::Status OnnxFrameworkInfo::ApplyOverride(
    const quantd::v1::FrameworkInfoOverride& o) {
  for (int i = 0; i < o.kernel_ops_size(); ++i) {
    const auto& k = o.kernel_ops(i);
    const std::string path = absl::StrCat("framework_info.kernel_ops[", i, "]");
    if (k.op_type().empty()) {
      return absl::InvalidArgumentError(path + ".op_type: empty");
    }
    if (k.weight_input() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, " (", k.op_type(),
                       ").weight_input: ", k.weight_input(), " is negative"));
    }
    // Axes of the weight tensor, counted from 0 (ONNX kernels have at most
    // 5 dims: Conv3D's; the per-node rank is checked when attaching).
    for (const auto& [field, axis] :
         {std::pair<const char*, int>{"out_channel_axis", k.out_channel_axis()},
          {"in_channel_axis", k.in_channel_axis()}}) {
      if (axis < 0 || axis >= kMaxKernelRank) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, " (", k.op_type(), ").", field, ": ", axis,
            " is not a weight axis in [0, ", kMaxKernelRank - 1, "]"));
      }
    }
    kernels_[k.op_type()] = {k.weight_input(), k.out_channel_axis(),
                             k.in_channel_axis()};
  }
  for (int i = 0; i < o.activation_ranges_size(); ++i) {
    const auto& r = o.activation_ranges(i);
    const std::string path =
        absl::StrCat("framework_info.activation_ranges[", i, "]");
    if (r.op_type().empty()) {
      return absl::InvalidArgumentError(path + ".op_type: empty");
    }
    for (const auto& [field, has, value] :
         {std::tuple<const char*, bool, double>{"min", r.has_min(), r.min()},
          {"max", r.has_max(), r.max()}}) {
      if (has && std::isnan(value)) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, " (", r.op_type(), ").", field, ": NaN is not a bound"));
      }
    }
    if (r.has_min() && r.has_max() && !(r.min() <= r.max())) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, " (", r.op_type(), ").min: ", r.min(),
                       " is greater than max ", r.max()));
    }
    OutputRange range;
    if (r.has_min()) range.min = r.min();
    if (r.has_max()) range.max = r.max();
    ranges_[r.op_type()] = range;
    activations_.insert(r.op_type());
  }
  for (const auto& op : o.no_quantization_ops()) no_quantization_.insert(op);
  return absl::OkStatus();
}

std::optional<KernelChannels> OnnxFrameworkInfo::Kernel(
    const OpView& op) const {
  auto it = kernels_.find(op.op_type);
  if (it == kernels_.end()) return std::nullopt;
  KernelChannels k = it->second;
  if (op.op_type == "Gemm") {
    auto trans_b = FindAttribute(op, "transB");
    const int64_t* t = trans_b ? std::get_if<int64_t>(&*trans_b) : nullptr;
    if (t != nullptr && *t != 0)
      std::swap(k.out_channel_axis, k.in_channel_axis);
  }
  return k;
}

bool OnnxFrameworkInfo::IsKernelOp(const std::string& op_type) const {
  return kernels_.count(op_type) > 0;
}

bool OnnxFrameworkInfo::IsActivationOp(const std::string& op_type) const {
  static const std::set<std::string> kActivations = {
      "Relu",     "Clip",       "LeakyRelu",      "PRelu",       "Elu",
      "Selu",     "Celu",       "Sigmoid",        "HardSigmoid", "Tanh",
      "Softmax",  "LogSoftmax", "Gelu",           "HardSwish",   "Mish",
      "Softplus", "Softsign",   "ThresholdedRelu"};
  return kActivations.count(op_type) > 0 || activations_.count(op_type) > 0;
}

bool OnnxFrameworkInfo::IsNoQuantizationOp(const std::string& op_type) const {
  return no_quantization_.count(op_type) > 0;
}

std::optional<OutputRange> OnnxFrameworkInfo::KnownOutputRange(
    const std::string& op_type) const {
  auto it = ranges_.find(op_type);
  if (it == ranges_.end()) return std::nullopt;
  return it->second;
}

int OnnxFrameworkInfo::OutputChannelAxis(const std::string& op_type) const {
  if (op_type == "Gemm" || op_type == "MatMul") return -1;
  return 1;
}

}  // namespace quantd::tpc
