#include "core/pipeline/gptq/gptq_blocks.h"

#include "absl/strings/str_cat.h"
#include "core/graph/graph_index.h"

namespace quantd {
namespace {

bool Trainable(v1::QuantizationMethod m) {
  return m == v1::QUANTIZATION_METHOD_POWER_OF_TWO ||
         m == v1::QUANTIZATION_METHOD_SYMMETRIC ||
         m == v1::QUANTIZATION_METHOD_UNIFORM;
}

// The activation a single node computes, if it is one the block supports.
std::optional<train::Activation> ActivationOf(const Graph& g,
                                              const Node& node) {
  using Kind = train::Activation::Kind;
  train::Activation a;
  if (node.op_type == "Relu") {
    a.kind = Kind::kRelu;
  } else if (node.op_type == "LeakyRelu") {
    a.kind = Kind::kLeakyRelu;
    a.a = node.GetFloat("alpha", 0.01f);
  } else if (node.op_type == "HardSigmoid") {
    a.kind = Kind::kHardSigmoid;
    a.a = node.GetFloat("alpha", 0.2f);
    a.b = node.GetFloat("beta", 0.5f);
  } else if (node.op_type == "HardSwish") {
    a.kind = Kind::kHardSwish;
    a.a = 1.0 / 6;
    a.b = 0.5;
  } else if (node.op_type == "Sigmoid") {
    a.kind = Kind::kSigmoid;
  } else if (node.op_type == "Tanh") {
    a.kind = Kind::kTanh;
  } else if (node.op_type == "Clip") {
    a.kind = Kind::kClip;
    a.a = node.GetFloat("min", -3.4028234663852886e38f);
    a.b = node.GetFloat("max", 3.4028234663852886e38f);
    for (int k : {1, 2}) {  // opset >= 11: min / max as constant inputs
      if (node.Input(k).empty()) continue;
      const Tensor* t = g.FindInitializer(node.Input(k));
      if (t == nullptr || t->num_elements() != 1) return std::nullopt;
      auto f = t->CastToFloat();
      if (!f.ok()) return std::nullopt;
      (k == 1 ? a.a : a.b) = f->data<float>()[0];
    }
  } else {
    return std::nullopt;
  }
  return a;
}

bool SetKernelShape(const Node& node, const Tensor& w, GptqBlock* b,
                    std::string* why) {
  if (node.op_type == "Conv" && w.rank() >= 5) {
    absl::StatusOr<exec::WindowAttrs> attrs = exec::ReadWindowAttrs(node);
    if (!attrs.ok()) {
      *why = std::string(attrs.status().message());
      return false;
    }
    b->window_nd = *std::move(attrs);
    b->kernel_nd.assign(w.shape().begin() + 2, w.shape().end());
    b->conv.out_channels = w.dim(0);
    b->conv.groups = node.GetInt("group", 1);
    b->is_conv = true;
    b->out_features = w.dim(0);
    b->in_features = w.num_elements() / w.dim(0);
    return true;
  }
  if (node.op_type == "Conv") {
    if (w.rank() != 3 && w.rank() != 4) {
      *why = absl::StrCat("kernel of rank ", w.rank());
      return false;
    }
    const bool two_d = w.rank() == 4;
    train::ConvGeometry& c = b->conv;
    c.out_channels = w.dim(0);
    c.kernel_h = two_d ? w.dim(2) : 1;
    c.kernel_w = w.dim(two_d ? 3 : 2);
    c.groups = node.GetInt("group", 1);
    const auto strides = node.GetInts("strides", {});
    const auto dil = node.GetInts("dilations", {});
    const auto pads = node.GetInts("pads", {});
    const std::string auto_pad = node.GetString("auto_pad", "NOTSET");
    if (auto_pad != "NOTSET" && auto_pad != "VALID") {
      *why = absl::StrCat("auto_pad ", auto_pad);
      return false;
    }
    const size_t r = two_d ? 2 : 1;
    if ((!strides.empty() && strides.size() != r) ||
        (!dil.empty() && dil.size() != r) ||
        (!pads.empty() && pads.size() != 2 * r)) {
      *why = "strides / dilations / pads do not match the kernel rank";
      return false;
    }
    if (two_d) {
      if (!strides.empty()) c.stride_h = strides[0], c.stride_w = strides[1];
      if (!dil.empty()) c.dilation_h = dil[0], c.dilation_w = dil[1];
      if (!pads.empty() && auto_pad == "NOTSET") {
        c.pad_top = pads[0], c.pad_left = pads[1];
        c.pad_bottom = pads[2], c.pad_right = pads[3];
      }
    } else {
      if (!strides.empty()) c.stride_w = strides[0];
      if (!dil.empty()) c.dilation_w = dil[0];
      if (!pads.empty() && auto_pad == "NOTSET") {
        c.pad_left = pads[0], c.pad_right = pads[1];
      }
    }
    b->is_conv = true;
    b->out_features = c.out_channels;
    b->in_features = w.num_elements() / c.out_channels;
    return true;
  }
  if (w.rank() != 2) {
    *why = absl::StrCat("weight of rank ", w.rank());
    return false;
  }
  if (node.op_type == "Gemm") {
    if (node.GetInt("transA", 0) != 0 || node.GetFloat("alpha", 1) != 1 ||
        node.GetFloat("beta", 1) != 1) {
      *why = "Gemm with transA / alpha / beta";
      return false;
    }
    b->transposed_weight = node.GetInt("transB", 0) == 0;
  } else {
    b->transposed_weight = true;  // MatMul: B is [K, N]
  }
  b->out_features = b->transposed_weight ? w.dim(1) : w.dim(0);
  b->in_features = b->transposed_weight ? w.dim(0) : w.dim(1);
  return true;
}

}  // namespace

std::vector<GptqBlock> FindGptqBlocks(const JobState& state,
                                      std::vector<std::string>* skipped) {
  const Graph& g = state.model.graph;
  const GraphIndex index(g);
  std::vector<GptqBlock> blocks;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    if (node.op_type != "Conv" && node.op_type != "Gemm" &&
        node.op_type != "MatMul") {
      continue;
    }
    const NodePlan& plan = state.plans[i];
    GptqBlock b;
    b.kernel_node = static_cast<int>(i);
    for (size_t k = 0; k < plan.weight_results.size(); ++k) {
      const auto& w = plan.weight_results[k];
      if (w.input_index == 1 && w.attr != "bias_attr") b.weight_index = k;
      if (w.input_index == 2) b.bias_trainable = false;
    }
    if (b.weight_index < 0) continue;  // float kernel
    const auto& wq = plan.weight_results[b.weight_index];
    const Tensor* w = g.FindInitializer(node.Input(1));
    std::string why;
    if (!Trainable(wq.method)) {
      why = absl::StrCat(v1::QuantizationMethod_Name(wq.method),
                         " weights have no trainable quantizer");
    } else if (w == nullptr || node.Input(0).empty() ||
               g.IsConstant(node.Input(0))) {
      why = "kernel is not a constant applied to a data input";
    } else if (!SetKernelShape(node, *w, &b, &why)) {
    } else if (!node.Input(2).empty()) {
      const Tensor* bias = g.FindInitializer(node.Input(2));
      if (bias == nullptr || bias->num_elements() != b.out_features) {
        why = "bias is not a constant of one value per output";
      } else {
        b.bias = node.Input(2);
      }
    }
    if (!why.empty()) {
      if (skipped != nullptr) {
        skipped->push_back(absl::StrCat(node.Label(), ": ", why));
      }
      continue;
    }
    // ONNX's MatMul has no bias input to write a trained bias into (MCT
    // trains only the biases layers have): its weights train alone.
    if (node.op_type == "MatMul") b.bias_trainable = false;
    b.input = node.Input(0);
    b.nodes.push_back(static_cast<int>(i));
    std::string out = node.outputs[0];
    int cur = static_cast<int>(i);
    while (!state.plans[cur].quantize_activation && !index.IsGraphOutput(out)) {
      const std::vector<int>& users = index.Consumers(out);
      std::optional<train::Activation> act;
      int last = -1;
      if (users.size() == 1) {
        act = ActivationOf(g, g.nodes[users[0]]);
        last = users[0];
      } else if (users.size() == 2) {
        // x * HardSigmoid(x): hard-swish written out (opset < 14 exports).
        for (int k = 0; k < 2; ++k) {
          const Node& hs = g.nodes[users[k]];
          const Node& mul = g.nodes[users[1 - k]];
          if (hs.op_type != "HardSigmoid" || mul.op_type != "Mul" ||
              mul.inputs.size() != 2 || index.NumUses(hs.outputs[0]) != 1) {
            continue;
          }
          if ((mul.inputs[0] == out && mul.inputs[1] == hs.outputs[0]) ||
              (mul.inputs[1] == out && mul.inputs[0] == hs.outputs[0])) {
            act = ActivationOf(g, hs);
            act->kind = train::Activation::Kind::kHardSwish;
            last = users[1 - k];
            if (state.plans[users[k]].quantize_activation) act.reset();
          }
        }
      }
      if (!act.has_value() || g.nodes[last].outputs.empty()) break;
      b.activations.push_back(*act);
      b.nodes.push_back(last);
      cur = last;
      out = g.nodes[last].outputs[0];
    }
    b.output = out;
    const NodePlan& tail = state.plans[cur];
    if (tail.quantize_activation && tail.activation.scale > 0 &&
        Trainable(tail.activation.method) &&
        (tail.activation.method == v1::QUANTIZATION_METHOD_UNIFORM ||
         tail.activation.threshold > 0)) {
      b.output_quantization = tail.activation;
    }
    blocks.push_back(std::move(b));
  }
  return blocks;
}

}  // namespace quantd
