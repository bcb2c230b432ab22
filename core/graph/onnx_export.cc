#include "core/graph/onnx_export.h"

#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

void ExportValueInfo(const ValueInfo& info, onnx::ValueInfoProto* proto) {
  proto->set_name(info.name);
  if (info.dtype == DType::kUndefined && !info.has_shape) return;
  auto* tensor_type = proto->mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(static_cast<int32_t>(info.dtype));
  if (!info.has_shape) return;
  auto* shape = tensor_type->mutable_shape();
  for (size_t i = 0; i < info.shape.size(); ++i) {
    auto* dim = shape->add_dim();
    if (info.shape[i] >= 0) {
      dim->set_dim_value(info.shape[i]);
    } else if (i < info.dim_params.size() && !info.dim_params[i].empty()) {
      dim->set_dim_param(info.dim_params[i]);
    }
  }
}

absl::Status ExportGraph(const Graph& graph, bool is_subgraph,
                         onnx::GraphProto* proto);

absl::Status ExportAttribute(const std::string& name, const Attribute& a,
                             const Node& node, onnx::AttributeProto* proto) {
  using AP = onnx::AttributeProto;
  proto->set_name(name);
  switch (a.type) {
    case Attribute::Type::kFloat:
      proto->set_type(AP::FLOAT);
      proto->set_f(a.f);
      break;
    case Attribute::Type::kInt:
      proto->set_type(AP::INT);
      proto->set_i(a.i);
      break;
    case Attribute::Type::kString:
      proto->set_type(AP::STRING);
      proto->set_s(a.s);
      break;
    case Attribute::Type::kTensor: {
      proto->set_type(AP::TENSOR);
      ASSIGN_OR_RETURN(*proto->mutable_t(), TensorToProto(a.t, ""));
      break;
    }
    case Attribute::Type::kGraph:
      proto->set_type(AP::GRAPH);
      if (!a.g) {
        return absl::InvalidArgumentError(absl::StrCat(
            node.Label(), ": graph attribute '", name, "' is empty"));
      }
      RETURN_IF_ERROR(ExportGraph(*a.g, true, proto->mutable_g()));
      break;
    case Attribute::Type::kFloats:
      proto->set_type(AP::FLOATS);
      for (float f : a.floats) proto->add_floats(f);
      break;
    case Attribute::Type::kInts:
      proto->set_type(AP::INTS);
      for (int64_t i : a.ints) proto->add_ints(i);
      break;
    case Attribute::Type::kStrings:
      proto->set_type(AP::STRINGS);
      for (const std::string& s : a.strings) proto->add_strings(s);
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(node.Label(), ": attribute '", name, "' has no type"));
  }
  return absl::OkStatus();
}

absl::Status ExportGraph(const Graph& graph, bool is_subgraph,
                         onnx::GraphProto* proto) {
  proto->set_name(graph.name);
  // Subgraph constants are written as Constant nodes, the form exporters
  // produce: ONNX Runtime's type inference treats subgraph initializers more
  // strictly than Constant nodes and rejects some models whose untaken If
  // branches do not fit the inferred shapes. Import turns them back into
  // initializers, so the IR round-trips either way.
  for (const auto& [name, tensor] : graph.initializers) {
    auto it = graph.sub_byte_types.find(name);
    const DType as_type =
        it == graph.sub_byte_types.end() ? DType::kUndefined : it->second;
    if (is_subgraph && as_type == DType::kUndefined) {
      onnx::NodeProto* np = proto->add_node();
      np->set_name(absl::StrCat(name, "__constant"));
      np->set_op_type("Constant");
      np->add_output(name);
      onnx::AttributeProto* value = np->add_attribute();
      value->set_name("value");
      value->set_type(onnx::AttributeProto::TENSOR);
      ASSIGN_OR_RETURN(*value->mutable_t(), TensorToProto(tensor, ""));
      continue;
    }
    ASSIGN_OR_RETURN(*proto->add_initializer(),
                     TensorToProto(tensor, name, as_type));
  }
  for (const Node& node : graph.nodes) {
    onnx::NodeProto* np = proto->add_node();
    np->set_name(node.name);
    np->set_op_type(node.op_type);
    if (!node.domain.empty()) np->set_domain(node.domain);
    for (const std::string& in : node.inputs) np->add_input(in);
    for (const std::string& out : node.outputs) np->add_output(out);
    for (const auto& [name, attr] : node.attributes) {
      RETURN_IF_ERROR(ExportAttribute(name, attr, node, np->add_attribute()));
    }
  }
  for (const ValueInfo& in : graph.inputs) {
    ExportValueInfo(in, proto->add_input());
  }
  for (const ValueInfo& out : graph.outputs) {
    ExportValueInfo(out, proto->add_output());
  }
  for (const auto& [name, info] : graph.value_info) {
    ExportValueInfo(info, proto->add_value_info());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<onnx::TensorProto> TensorToProto(const Tensor& tensor,
                                                const std::string& name,
                                                DType as_type) {
  onnx::TensorProto proto;
  if (!name.empty()) proto.set_name(name);
  for (int64_t d : tensor.shape()) proto.add_dims(d);
  if (as_type == DType::kUndefined || as_type == tensor.dtype()) {
    if (!IsStorableDType(tensor.dtype())) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", name, "' has no storable type"));
    }
    proto.set_data_type(static_cast<int32_t>(tensor.dtype()));
    // Our buffers are little-endian, as raw_data requires.
    proto.set_raw_data(tensor.raw(), tensor.byte_size());
    return proto;
  }
  const bool is_signed = as_type == DType::kInt4;
  if ((as_type != DType::kInt4 && as_type != DType::kUint4) ||
      tensor.dtype() != (is_signed ? DType::kInt8 : DType::kUint8)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "': cannot store ",
                     DTypeName(tensor.dtype()), " as ", DTypeName(as_type)));
  }
  const int64_t n = tensor.num_elements();
  std::string packed(static_cast<size_t>((n + 1) / 2), '\0');
  const auto* values = static_cast<const uint8_t*>(tensor.raw());
  for (int64_t i = 0; i < n; ++i) {
    const int v = is_signed ? static_cast<int8_t>(values[i]) : values[i];
    if (is_signed ? (v < -8 || v > 7) : (v > 15)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", name, "': element ", i, " = ", v,
                       " does not fit in ", DTypeName(as_type)));
    }
    const uint8_t nibble = static_cast<uint8_t>(v) & 0x0f;
    packed[i / 2] = static_cast<char>(static_cast<uint8_t>(packed[i / 2]) |
                                      (nibble << ((i % 2) * 4)));
  }
  proto.set_data_type(static_cast<int32_t>(as_type));
  proto.set_raw_data(std::move(packed));
  return proto;
}

absl::StatusOr<onnx::ModelProto> ExportOnnxProto(const Model& model) {
  onnx::ModelProto proto;
  proto.set_ir_version(model.ir_version);
  if (!model.producer_name.empty()) {
    proto.set_producer_name(model.producer_name);
  }
  if (!model.producer_version.empty()) {
    proto.set_producer_version(model.producer_version);
  }
  if (!model.doc_string.empty()) proto.set_doc_string(model.doc_string);
  for (const auto& [domain, version] : model.opset_import) {
    auto* opset = proto.add_opset_import();
    opset->set_domain(domain);
    opset->set_version(version);
  }
  for (const auto& [key, value] : model.metadata_props) {
    auto* entry = proto.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
  }
  RETURN_IF_ERROR(ExportGraph(model.graph, false, proto.mutable_graph()));
  if (model.ir_version < 4) {
    // Before IR 4 every initializer must also be declared as a graph input.
    for (const auto& [name, tensor] : model.graph.initializers) {
      ValueInfo info;
      info.name = name;
      auto it = model.graph.sub_byte_types.find(name);
      info.dtype =
          it == model.graph.sub_byte_types.end() ? tensor.dtype() : it->second;
      info.shape = tensor.shape();
      info.has_shape = true;
      ExportValueInfo(info, proto.mutable_graph()->add_input());
    }
  }
  return proto;
}

absl::StatusOr<std::string> ExportOnnx(const Model& model) {
  ASSIGN_OR_RETURN(onnx::ModelProto proto, ExportOnnxProto(model));
  const size_t size = proto.ByteSizeLong();
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "exported model is ", size, " bytes, over protobuf's 2 GiB limit"));
  }
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) {
    return absl::InternalError("failed to serialize the ONNX model");
  }
  return bytes;
}

}  // namespace quantd
