#include "core/graph/opset_upgrade.h"

#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/graph/graph_edit.h"
#include "core/graph/shape_inference.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

Attribute StringAttr(const std::string& s) {
  Attribute a;
  a.type = Attribute::Type::kString;
  a.s = s;
  return a;
}

Attribute IntAttr(int64_t i) {
  Attribute a;
  a.type = Attribute::Type::kInt;
  a.i = i;
  return a;
}

class Upgrader {
 public:
  // `probed` holds types inferred on a copy of the graph (may be null).
  Upgrader(int64_t from, int64_t to,
           const std::map<std::string, ValueInfo>* probed)
      : from_(from), to_(to), probed_(probed) {}

  absl::Status Run(Graph* g) {
    graph_ = g;
    for (const Node& n : g->nodes) node_names_.insert(n.name);
    std::vector<Node> out;
    out.reserve(g->nodes.size());
    for (Node& node : g->nodes) {
      for (auto& [key, attr] : node.attributes) {
        if (!attr.g) continue;
        Upgrader sub(from_, to_, nullptr);
        RETURN_IF_ERROR(sub.Run(MutableSubgraph(&attr)));
      }
      if (!node.domain.empty() && node.domain != "ai.onnx") {
        out.push_back(std::move(node));
        continue;
      }
      RETURN_IF_ERROR(UpgradeNode(std::move(node), &out));
    }
    g->nodes = std::move(out);
    return absl::OkStatus();
  }

 private:
  std::string NewInit(const Node& node, const std::string& what, Tensor t) {
    const std::string name =
        UniqueTensorName(*graph_, absl::StrCat(node.name, "_", what));
    graph_->initializers[name] = std::move(t);
    return name;
  }

  std::string NewNodeName(const std::string& base) {
    std::string name = base;
    for (int k = 1; node_names_.contains(name); ++k) {
      name = absl::StrCat(base, "_", k);
    }
    node_names_.insert(name);
    return name;
  }

  void SetInput(Node* node, size_t k, const std::string& name) {
    if (node->inputs.size() <= k) node->inputs.resize(k + 1);
    node->inputs[k] = name;
  }

  // Moves an ints attribute to input k as an int64 initializer.
  void IntsAttrToInput(Node* node, const std::string& attr, size_t k) {
    const Attribute* a = node->FindAttribute(attr);
    if (a == nullptr) return;
    std::vector<int64_t> v = a->ints;
    if (a->type == Attribute::Type::kInt) v = {a->i};
    node->attributes.erase(attr);
    SetInput(node, k,
             NewInit(*node, attr,
                     Tensor::FromVector<int64_t>(
                         v, {static_cast<int64_t>(v.size())})));
  }

  int64_t KnownRank(const std::string& tensor) const {
    auto it = graph_->value_info.find(tensor);
    if (it != graph_->value_info.end() && it->second.has_shape) {
      return static_cast<int64_t>(it->second.shape.size());
    }
    if (probed_ != nullptr) {
      auto p = probed_->find(tensor);
      if (p != probed_->end() && p->second.has_shape) {
        return static_cast<int64_t>(p->second.shape.size());
      }
    }
    for (const ValueInfo& in : graph_->inputs) {
      if (in.name == tensor && in.has_shape) {
        return static_cast<int64_t>(in.shape.size());
      }
    }
    if (const Tensor* t = graph_->FindInitializer(tensor)) return t->rank();
    return -1;
  }

  absl::Status UpgradeNode(Node node, std::vector<Node>* out) {
    const std::string& op = node.op_type;
    if (from_ < 13) {
      if (op == "Clip" && from_ < 11) {
        const float lo =
            node.GetFloat("min", -std::numeric_limits<float>::max());
        const float hi =
            node.GetFloat("max", std::numeric_limits<float>::max());
        const bool has_lo = node.HasAttribute("min");
        const bool has_hi = node.HasAttribute("max");
        node.attributes.erase("min");
        node.attributes.erase("max");
        if (has_lo) {
          SetInput(&node, 1,
                   NewInit(node, "min", Tensor::FromVector<float>({lo}, {})));
        }
        if (has_hi) {
          if (node.inputs.size() < 2) SetInput(&node, 1, "");
          SetInput(&node, 2,
                   NewInit(node, "max", Tensor::FromVector<float>({hi}, {})));
        }
      } else if (op == "Split") {
        IntsAttrToInput(&node, "split", 1);
      } else if (op == "Squeeze" || op == "Unsqueeze" || op == "ReduceSum") {
        IntsAttrToInput(&node, "axes", 1);
      } else if (op == "Pad" && from_ < 11) {
        const char* key = node.HasAttribute("pads") ? "pads" : "paddings";
        const std::vector<int64_t> pads = node.GetInts(key);
        const float value = node.GetFloat("value", 0.f);
        const bool has_value = node.HasAttribute("value");
        node.attributes.erase(key);
        node.attributes.erase("value");
        SetInput(&node, 1,
                 NewInit(node, "pads",
                         Tensor::FromVector<int64_t>(
                             pads, {static_cast<int64_t>(pads.size())})));
        if (has_value && value != 0.f) {
          SetInput(
              &node, 2,
              NewInit(node, "value", Tensor::FromVector<float>({value}, {})));
        }
      } else if (op == "Slice" && from_ < 10) {
        const bool has_axes = node.HasAttribute("axes");
        IntsAttrToInput(&node, "starts", 1);
        IntsAttrToInput(&node, "ends", 2);
        if (has_axes) IntsAttrToInput(&node, "axes", 3);
      } else if (op == "TopK" && from_ < 10) {
        IntsAttrToInput(&node, "k", 1);
      } else if (op == "Dropout" && from_ < 12) {
        const Attribute* r = node.FindAttribute("ratio");
        if (r != nullptr) {
          const float ratio = r->f;
          node.attributes.erase("ratio");
          SetInput(
              &node, 1,
              NewInit(node, "ratio", Tensor::FromVector<float>({ratio}, {})));
        }
      } else if (op == "Scan" && from_ < 9) {
        return absl::UnimplementedError(absl::StrCat(
            node.Label(),
            ": Scan-8 (batched, with sequence_lens) has no opset 9+ form"));
      } else if (op == "Scatter") {
        node.op_type = "ScatterElements";
      } else if (op == "BatchNormalization") {
        if (node.GetInt("spatial", 1) != 1) {
          return absl::UnimplementedError(absl::StrCat(
              node.Label(), ": spatial=0 has no equivalent in opset 9+"));
        }
        node.attributes.erase("spatial");
      } else if (op == "Upsample" || (op == "Resize" && from_ == 10)) {
        RETURN_IF_ERROR(UpgradeUpsample(&node));
      } else if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax")) {
        return UpgradeSoftmax(std::move(node), out);
      }
    }
    if (from_ < 18 && to_ >= 18) {
      static const auto* kReduce = new absl::flat_hash_set<std::string>{
          "ReduceMean",   "ReduceMax",       "ReduceMin",
          "ReduceProd",   "ReduceL1",        "ReduceL2",
          "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
      if (kReduce->contains(op)) IntsAttrToInput(&node, "axes", 1);
    }
    if (from_ < 18 && to_ >= 18 && op == "Split" && node.Input(1).empty() &&
        !node.HasAttribute("num_outputs")) {
      // Split-18 needs either the split input or num_outputs; an equal split
      // (which Split-13 required to divide evenly) is num_outputs chunks.
      node.attributes["num_outputs"] =
          IntAttr(static_cast<int64_t>(node.outputs.size()));
    }
    if (from_ < 21 && to_ >= 21 && op == "GroupNormalization") {
      RETURN_IF_ERROR(UpgradeGroupNorm(&node));
    }
    out->push_back(std::move(node));
    return absl::OkStatus();
  }

  absl::Status UpgradeUpsample(Node* node) {
    const std::string mode = node->GetString("mode", "nearest");
    std::string scales;
    if (node->op_type == "Upsample" && from_ < 9) {
      const std::vector<float> s = node->GetFloats("scales");
      if (s.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(node->Label(), ": scales attribute is required"));
      }
      scales = NewInit(
          *node, "scales",
          Tensor::FromVector<float>(s, {static_cast<int64_t>(s.size())}));
    } else {
      scales = node->Input(1);
    }
    node->attributes.erase("scales");
    node->op_type = "Resize";
    node->inputs = {node->Input(0), "", scales};
    node->attributes["mode"] = StringAttr(mode == "bilinear" ? "linear" : mode);
    // Upsample and Resize-10 sample at x_in = x_out / scale.
    node->attributes["coordinate_transformation_mode"] =
        StringAttr("asymmetric");
    if (mode == "nearest")
      node->attributes["nearest_mode"] = StringAttr("floor");
    return absl::OkStatus();
  }

  // Opset <= 12 Softmax normalizes the input flattened to 2-D at `axis`.
  absl::Status UpgradeSoftmax(Node node, std::vector<Node>* out) {
    const int64_t axis = node.GetInt("axis", 1);
    const int64_t rank = KnownRank(node.Input(0));
    if (rank >= 0 && (axis == rank - 1 || axis == -1)) {
      node.attributes["axis"] = IntAttr(-1);
      out->push_back(std::move(node));
      return absl::OkStatus();
    }
    const std::string x = node.Input(0);
    const std::string y = node.outputs[0];
    Node shape;
    shape.name = NewNodeName(absl::StrCat(node.name, "_shape"));
    shape.op_type = "Shape";
    shape.inputs = {x};
    shape.outputs = {UniqueTensorName(*graph_, absl::StrCat(x, "_shape"))};
    Node flatten;
    flatten.name = NewNodeName(absl::StrCat(node.name, "_flatten"));
    flatten.op_type = "Flatten";
    flatten.inputs = {x};
    flatten.outputs = {UniqueTensorName(*graph_, absl::StrCat(x, "_2d"))};
    flatten.attributes["axis"] = IntAttr(axis);
    const std::string y2d = UniqueTensorName(*graph_, absl::StrCat(y, "_2d"));
    Node reshape;
    reshape.name = NewNodeName(absl::StrCat(node.name, "_reshape"));
    reshape.op_type = "Reshape";
    reshape.inputs = {y2d, shape.outputs[0]};
    reshape.outputs = {y};
    node.inputs[0] = flatten.outputs[0];
    node.outputs[0] = y2d;
    node.attributes["axis"] = IntAttr(1);
    out->push_back(std::move(shape));
    out->push_back(std::move(flatten));
    out->push_back(std::move(node));
    out->push_back(std::move(reshape));
    return absl::OkStatus();
  }

  // GroupNormalization-18 scale/bias are per group; 21 wants per channel.
  absl::Status UpgradeGroupNorm(Node* node) {
    const int64_t groups = node->GetInt("num_groups", 0);
    auto it = graph_->value_info.find(node->Input(0));
    int64_t channels = -1;
    if (it != graph_->value_info.end() && it->second.shape.size() >= 2) {
      channels = it->second.shape[1];
    }
    for (const ValueInfo& in : graph_->inputs) {
      if (in.name == node->Input(0) && in.shape.size() >= 2) {
        channels = in.shape[1];
      }
    }
    const Tensor* scale = graph_->FindInitializer(node->Input(1));
    const Tensor* bias = graph_->FindInitializer(node->Input(2));
    if (groups <= 0 || channels <= 0 || channels % groups != 0 || !scale ||
        !bias || scale->dtype() != DType::kFloat ||
        bias->dtype() != DType::kFloat || scale->num_elements() != groups ||
        bias->num_elements() != groups) {
      return absl::UnimplementedError(absl::StrCat(
          node->Label(),
          ": upgrading to opset 21 needs constant per-group scale/bias and a "
          "known channel count"));
    }
    std::vector<float> s, b;
    for (int64_t c = 0; c < channels; ++c) {
      s.push_back(scale->data<float>()[c / (channels / groups)]);
      b.push_back(bias->data<float>()[c / (channels / groups)]);
    }
    SetInput(node, 1,
             NewInit(*node, "scale", Tensor::FromVector<float>(s, {channels})));
    SetInput(node, 2,
             NewInit(*node, "bias", Tensor::FromVector<float>(b, {channels})));
    return absl::OkStatus();
  }

  int64_t from_, to_;
  const std::map<std::string, ValueInfo>* probed_;
  Graph* graph_ = nullptr;
  absl::flat_hash_set<std::string> node_names_;
};

}  // namespace

int64_t MinIrVersionForOpset(int64_t opset) {
  if (opset >= 21) return 10;
  if (opset >= 19) return 9;
  if (opset >= 15) return 8;
  if (opset >= 13) return 7;
  if (opset >= 12) return 7;
  if (opset >= 11) return 6;
  if (opset >= 10) return 5;
  if (opset >= 9) return 4;
  return 3;
}

absl::Status UpgradeOpset(Model* model, int64_t target_opset) {
  const int64_t from = model->DefaultOpset();
  if (target_opset < 13 || target_opset > 21) {
    return absl::InvalidArgumentError(absl::StrCat(
        "target opset ", target_opset, " is not supported (13..21)"));
  }
  if (from < 7) {
    return absl::UnimplementedError(
        absl::StrCat("cannot upgrade from opset ", from, " (7..21 accepted)"));
  }
  if (from > target_opset) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model is at opset ", from, ", newer than the target ", target_opset));
  }
  if (from == target_opset) return absl::OkStatus();
  // Ranks let Softmax-style ops keep one node; a copy is inferred so that
  // the model itself is left as it was (inference may fail on odd models,
  // which then get the general rewrite).
  Model probe = *model;
  const bool probed = InferShapes(&probe).ok();
  Upgrader upgrader(from, target_opset,
                    probed ? &probe.graph.value_info : nullptr);
  RETURN_IF_ERROR(upgrader.Run(&model->graph));
  model->opset_import.erase("ai.onnx");
  model->opset_import[""] = target_opset;
  model->ir_version =
      std::max(model->ir_version, MinIrVersionForOpset(target_opset));
  return absl::OkStatus();
}

}  // namespace quantd
