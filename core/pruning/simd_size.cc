#include "core/pruning/simd_size.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace quantd::pruning {
namespace {

// What TPC attachment reads of a kernel layer: type, attributes, constant
// inputs and channel counts.
tpc::OpView KernelOpView(const Node& node, const Graph& g) {
  tpc::OpView v;
  v.name = node.name;
  v.op_type = node.op_type;
  v.domain = node.domain == "ai.onnx" ? "" : node.domain;
  for (const auto& [key, a] : node.attributes) {
    if (a.type == Attribute::Type::kInt) v.attributes[key] = a.i;
    if (a.type == Attribute::Type::kInts) v.attributes[key] = a.ints;
    if (a.type == Attribute::Type::kString) v.attributes[key] = a.s;
    if (a.type == Attribute::Type::kFloat) {
      v.attributes[key] = static_cast<double>(a.f);
    }
  }
  for (const std::string& in : node.inputs) {
    tpc::OpInput oi;
    oi.present = !in.empty();
    if (const Tensor* t = g.FindInitializer(in)) {
      oi.is_constant = true;
      oi.shape = t->shape();
    }
    v.inputs.push_back(std::move(oi));
  }
  const Tensor* w = g.FindInitializer(node.Input(1));
  if (w != nullptr && w->rank() >= 2) {
    if (node.op_type == "Conv") {
      v.out_channels = w->dim(0);
      v.in_channels = w->dim(1) * node.GetInt("group", 1);
    } else if (node.op_type == "Gemm") {
      const bool tb = node.GetInt("transB", 0) != 0;
      v.out_channels = tb ? w->dim(0) : w->dim(1);
      v.in_channels = tb ? w->dim(1) : w->dim(0);
    } else if (node.op_type == "MatMul") {
      v.in_channels = w->dim(0);
      v.out_channels = w->dim(1);
    }
  }
  return v;
}

}  // namespace

absl::StatusOr<int> SimdSize(const Node& node, const Graph& graph,
                             const tpc::OnnxTpcAttachment& attachment) {
  ASSIGN_OR_RETURN(tpc::AttachedOp op,
                   attachment.Attach(KernelOpView(node, graph)));
  int simd = 0;
  auto consider = [&simd](const v1::OpQuantizationConfig& c) {
    if (c.has_simd_size() && c.simd_size() > 0) {
      simd = simd == 0 ? c.simd_size() : std::min(simd, c.simd_size());
    }
  };
  for (const auto& c : op.qco->quantization_configurations()) consider(c);
  if (op.qco->quantization_configurations().empty()) {
    consider(op.qco->base_config());
  }
  if (simd == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(node.Label(), ": op set '",
                     op.op_set.empty() ? "(default_qco)" : op.op_set,
                     "' of the TPC has no simd_size; pruning needs one"));
  }
  return simd;
}

}  // namespace quantd::pruning
