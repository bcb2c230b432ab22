#include "core/graph/onnx_import.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <set>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/internal/onnx_import_tensor.h"
#include "core/graph/validation.h"
#include "core/util/status_macros.h"
#include "google/protobuf/io/coded_stream.h"

namespace quantd {
namespace {

// Mutable state shared by the recursive graph import.
struct ImportContext {
  const ImportOptions& options;
  int64_t nodes = 0;
  int64_t initializer_bytes = 0;
};

using onnx_import_internal::TensorFromProtoImpl;

absl::StatusOr<ValueInfo> ImportValueInfo(const onnx::ValueInfoProto& proto,
                                          const std::string& where) {
  ValueInfo info;
  info.name = proto.name();
  if (!proto.has_type()) return info;  // type unknown: allowed for outputs
  const onnx::TypeProto& type = proto.type();
  // An empty TypeProto (exporters write them for If-branch outputs) says
  // nothing, like an absent one.
  if (type.value_case() == onnx::TypeProto::VALUE_NOT_SET) return info;
  if (type.value_case() != onnx::TypeProto::kTensorType) {
    return absl::UnimplementedError(absl::StrCat(
        where, " '", proto.name(),
        "': only tensor types are supported (sequence, map, optional and "
        "sparse values are not)"));
  }
  const auto& tensor_type = type.tensor_type();
  if (!IsKnownDType(tensor_type.elem_type())) {
    return absl::InvalidArgumentError(absl::StrCat(where, " '", proto.name(),
                                                   "': unknown elem_type ",
                                                   tensor_type.elem_type()));
  }
  info.dtype = static_cast<DType>(tensor_type.elem_type());
  if (!tensor_type.has_shape()) return info;
  info.has_shape = true;
  for (const auto& dim : tensor_type.shape().dim()) {
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, " '", proto.name(), "': negative dimension ",
                         dim.dim_value()));
      }
      info.shape.push_back(dim.dim_value());
      info.dim_params.push_back("");
    } else {
      info.shape.push_back(-1);
      info.dim_params.push_back(dim.has_dim_param() ? dim.dim_param() : "");
    }
  }
  return info;
}

absl::StatusOr<Graph> ImportGraph(const onnx::GraphProto& proto,
                                  ImportContext* ctx);

absl::StatusOr<Attribute> ImportAttribute(const onnx::AttributeProto& proto,
                                          const std::string& where,
                                          ImportContext* ctx) {
  Attribute a;
  const std::string at =
      absl::StrCat(where, ": attribute '", proto.name(), "'");
  if (!proto.ref_attr_name().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        at, ": attribute references are only valid inside functions"));
  }
  using AP = onnx::AttributeProto;
  int type = proto.type();
  if (type == AP::UNDEFINED) {
    // IR < 2 files carry no type: infer it from the populated field.
    if (proto.has_f()) {
      type = AP::FLOAT;
    } else if (proto.has_i()) {
      type = AP::INT;
    } else if (proto.has_s()) {
      type = AP::STRING;
    } else if (proto.has_t()) {
      type = AP::TENSOR;
    } else if (proto.has_g()) {
      type = AP::GRAPH;
    } else if (proto.floats_size() > 0) {
      type = AP::FLOATS;
    } else if (proto.ints_size() > 0) {
      type = AP::INTS;
    } else if (proto.strings_size() > 0) {
      type = AP::STRINGS;
    }
  }
  switch (type) {
    case AP::FLOAT:
      a.type = Attribute::Type::kFloat;
      a.f = proto.f();
      break;
    case AP::INT:
      a.type = Attribute::Type::kInt;
      a.i = proto.i();
      break;
    case AP::STRING:
      a.type = Attribute::Type::kString;
      a.s = proto.s();
      break;
    case AP::TENSOR: {
      a.type = Attribute::Type::kTensor;
      DType sub_byte = DType::kUndefined;
      ASSIGN_OR_RETURN(
          a.t, TensorFromProtoImpl(proto.t(), ctx->options.max_tensor_bytes,
                                   &sub_byte, at));
      if (sub_byte != DType::kUndefined) {
        return absl::UnimplementedError(
            absl::StrCat(at, ": 4-bit tensor attributes are not supported"));
      }
      ctx->initializer_bytes += static_cast<int64_t>(a.t.byte_size());
      break;
    }
    case AP::GRAPH: {
      a.type = Attribute::Type::kGraph;
      ASSIGN_OR_RETURN(Graph g, ImportGraph(proto.g(), ctx));
      a.g = std::make_shared<Graph>(std::move(g));
      break;
    }
    case AP::FLOATS:
      a.type = Attribute::Type::kFloats;
      a.floats.assign(proto.floats().begin(), proto.floats().end());
      break;
    case AP::INTS:
      a.type = Attribute::Type::kInts;
      a.ints.assign(proto.ints().begin(), proto.ints().end());
      break;
    case AP::STRINGS:
      a.type = Attribute::Type::kStrings;
      a.strings.assign(proto.strings().begin(), proto.strings().end());
      break;
    default:
      return absl::UnimplementedError(absl::StrCat(
          at, ": attribute type ", type,
          " (tensors, graphs, sparse tensors or type protos) is not "
          "supported"));
  }
  return a;
}

// Constant node -> the tensor it produces.
absl::StatusOr<Tensor> ConstantValue(const Node& node) {
  if (node.attributes.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(node.Label(), ": needs exactly one value attribute, has ",
                     node.attributes.size()));
  }
  const auto& [key, a] = *node.attributes.begin();
  if (key == "value" && a.type == Attribute::Type::kTensor) return a.t;
  if (key == "value_float" && a.type == Attribute::Type::kFloat) {
    return Tensor::FromVector<float>({a.f}, {});
  }
  if (key == "value_floats" && a.type == Attribute::Type::kFloats) {
    return Tensor::FromVector<float>(a.floats,
                                     {static_cast<int64_t>(a.floats.size())});
  }
  if (key == "value_int" && a.type == Attribute::Type::kInt) {
    return Tensor::FromVector<int64_t>({a.i}, {});
  }
  if (key == "value_ints" && a.type == Attribute::Type::kInts) {
    return Tensor::FromVector<int64_t>(a.ints,
                                       {static_cast<int64_t>(a.ints.size())});
  }
  return absl::UnimplementedError(absl::StrCat(
      node.Label(), ": attribute '", key,
      "' is not supported (value, value_float(s), value_int(s) are)"));
}

// The graph's initializers, each checked against the tensor limit and the
// total budget left before it is allocated.
absl::Status ImportInitializers(const onnx::GraphProto& proto,
                                ImportContext* ctx, Graph& graph) {
  if (proto.sparse_initializer_size() > 0) {
    return absl::UnimplementedError(absl::StrCat(
        "graph '", proto.name(), "': sparse initializer '",
        proto.sparse_initializer(0).values().name(), "' is not supported"));
  }
  for (const auto& init : proto.initializer()) {
    const std::string where = absl::StrCat("initializer '", init.name(), "'");
    if (init.name().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph '", proto.name(), "': initializer without name"));
    }
    if (graph.initializers.count(init.name()) > 0) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": defined twice"));
    }
    DType sub_byte = DType::kUndefined;
    // The total budget left bounds this tensor too, before it is allocated.
    const int64_t left = std::max<int64_t>(
        ctx->options.max_total_initializer_bytes - ctx->initializer_bytes, 0);
    absl::StatusOr<Tensor> parsed = TensorFromProtoImpl(
        init, std::min(ctx->options.max_tensor_bytes, left), &sub_byte, where);
    if (!parsed.ok() &&
        parsed.status().code() == absl::StatusCode::kResourceExhausted &&
        left < ctx->options.max_tensor_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat(where, ": initializers exceed the total limit of ",
                       ctx->options.max_total_initializer_bytes, " bytes"));
    }
    if (!parsed.ok()) return parsed.status();
    Tensor t = *std::move(parsed);
    ctx->initializer_bytes += static_cast<int64_t>(t.byte_size());
    if (ctx->initializer_bytes > ctx->options.max_total_initializer_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat(where, ": initializers exceed the total limit of ",
                       ctx->options.max_total_initializer_bytes, " bytes"));
    }
    if (sub_byte != DType::kUndefined)
      graph.sub_byte_types[init.name()] = sub_byte;
    graph.initializers.emplace(init.name(), std::move(t));
  }
  return absl::OkStatus();
}

absl::StatusOr<Graph> ImportGraph(const onnx::GraphProto& proto,
                                  ImportContext* ctx) {
  Graph graph;
  graph.name = proto.name();
  ctx->nodes += proto.node_size();
  if (ctx->nodes > ctx->options.max_nodes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("model has more than ", ctx->options.max_nodes,
                     " nodes (ImportOptions.max_nodes)"));
  }
  RETURN_IF_ERROR(ImportInitializers(proto, ctx, graph));
  for (const auto& input : proto.input()) {
    ASSIGN_OR_RETURN(ValueInfo info, ImportValueInfo(input, "graph input"));
    if (info.name.empty()) {
      return absl::InvalidArgumentError("graph input without name");
    }
    if (graph.initializers.count(info.name) > 0) continue;  // a constant
    graph.inputs.push_back(std::move(info));
  }
  for (const auto& output : proto.output()) {
    ASSIGN_OR_RETURN(ValueInfo info, ImportValueInfo(output, "graph output"));
    if (info.name.empty()) {
      return absl::InvalidArgumentError("graph output without name");
    }
    graph.outputs.push_back(std::move(info));
  }
  for (const auto& vi : proto.value_info()) {
    auto info = ImportValueInfo(vi, "value_info");
    // value_info is a hint; unsupported (e.g. sequence) entries are dropped.
    if (!info.ok() || info->name.empty()) continue;
    graph.value_info[info->name] = *std::move(info);
  }

  // Node names: keep given ones, generate "<op_type>_<index>" for missing
  // ones and suffix duplicates so that every name is unique.
  absl::flat_hash_set<std::string> names;
  for (const auto& n : proto.node()) {
    if (!n.name().empty()) names.insert(n.name());
  }
  absl::flat_hash_set<std::string> used;
  std::set<std::string> output_names;
  for (const auto& out : proto.output()) output_names.insert(out.name());

  graph.nodes.reserve(proto.node_size());
  for (int idx = 0; idx < proto.node_size(); ++idx) {
    const onnx::NodeProto& np = proto.node(idx);
    Node node;
    node.op_type = np.op_type();
    node.domain = np.domain();
    std::string name = np.name();
    if (name.empty() || used.contains(name)) {
      const std::string base = name.empty()
                                   ? absl::StrCat(np.op_type(), "_", idx)
                                   : absl::StrCat(name, "_", idx);
      name = base;
      for (int k = 1;
           used.contains(name) || (name != np.name() && names.contains(name));
           ++k) {
        name = absl::StrCat(base, "_", k);
      }
    }
    used.insert(name);
    node.name = std::move(name);
    if (node.op_type.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", node.name, "': empty op_type"));
    }
    node.inputs.assign(np.input().begin(), np.input().end());
    node.outputs.assign(np.output().begin(), np.output().end());
    for (const auto& ap : np.attribute()) {
      if (node.attributes.count(ap.name()) > 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            node.Label(), ": attribute '", ap.name(), "' given twice"));
      }
      ASSIGN_OR_RETURN(Attribute a, ImportAttribute(ap, node.Label(), ctx));
      node.attributes.emplace(ap.name(), std::move(a));
    }
    if (ctx->initializer_bytes > ctx->options.max_total_initializer_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat(node.Label(), ": constants exceed the total limit of ",
                       ctx->options.max_total_initializer_bytes, " bytes"));
    }

    if (node.op_type == "Constant" && IsDefaultDomain(node.domain)) {
      if (node.outputs.size() != 1 || node.outputs[0].empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(node.Label(), ": needs exactly one output"));
      }
      ASSIGN_OR_RETURN(Tensor value, ConstantValue(node));
      const std::string& out = node.outputs[0];
      if (graph.initializers.count(out) > 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            node.Label(), ": output '", out, "' is also an initializer"));
      }
      if (output_names.count(out) == 0) {
        graph.initializers.emplace(out, std::move(value));
        continue;
      }
      // A graph output stays produced by a node: initializer -> Identity.
      std::string const_name = absl::StrCat(out, "__const");
      for (int k = 1; graph.initializers.count(const_name) > 0; ++k) {
        const_name = absl::StrCat(out, "__const", k);
      }
      graph.initializers.emplace(const_name, std::move(value));
      node.op_type = "Identity";
      node.attributes.clear();
      node.inputs = {const_name};
    }
    graph.nodes.push_back(std::move(node));
  }
  return graph;
}

absl::Status CheckModelHeader(const onnx::ModelProto& proto,
                              const ImportOptions& options) {
  if (!proto.has_graph()) {
    return absl::InvalidArgumentError("model has no graph");
  }
  if (proto.ir_version() < 3 || proto.ir_version() > options.max_ir_version) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ir_version ", proto.ir_version(), " is not supported (accepted: 3..",
        options.max_ir_version, ")"));
  }
  if (proto.functions_size() > 0) {
    return absl::UnimplementedError(absl::StrCat("model-local function '",
                                                 proto.functions(0).name(),
                                                 "' is not supported"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Model> ImportOnnxModel(const onnx::ModelProto& proto,
                                      const ImportOptions& options) {
  RETURN_IF_ERROR(CheckModelHeader(proto, options));
  Model model;
  model.ir_version = proto.ir_version();
  model.producer_name = proto.producer_name();
  model.producer_version = proto.producer_version();
  model.doc_string = proto.doc_string();
  for (const auto& entry : proto.metadata_props()) {
    model.metadata_props.emplace_back(entry.key(), entry.value());
  }
  for (const auto& opset : proto.opset_import()) {
    const std::string domain =
        opset.domain() == "ai.onnx" ? std::string() : opset.domain();
    if (model.opset_import.count(domain) > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "opset_import: domain '", opset.domain(), "' listed twice"));
    }
    model.opset_import[domain] = opset.version();
  }
  const int64_t opset = model.DefaultOpset();
  if (opset == 0) {
    return absl::InvalidArgumentError(
        "opset_import: the default ONNX domain is not imported");
  }
  if (opset < options.min_opset || opset > options.max_opset) {
    return absl::UnimplementedError(
        absl::StrCat("opset_import: default-domain opset ", opset,
                     " is not supported (accepted: ", options.min_opset, "..",
                     options.max_opset, ")"));
  }
  ImportContext ctx{options};
  ASSIGN_OR_RETURN(model.graph, ImportGraph(proto.graph(), &ctx));
  // Without outputs nothing is computed: a job would report SQNR 0 on an
  // empty comparison.
  if (model.graph.outputs.empty()) {
    return absl::InvalidArgumentError(
        "graph.output: the model has no outputs (nothing to quantize or "
        "compare)");
  }
  RETURN_IF_ERROR(ValidateModel(&model));
  if (!options.input_shapes.empty()) {
    RETURN_IF_ERROR(BindInputShapes(options.input_shapes, &model.graph));
  }
  return model;
}

namespace {
// protobuf's default; kept for parsing so that untrusted input cannot
// recurse deeper (stack), raised only to tell why a parse failed.
constexpr int kProtobufRecursionLimit = 100;
constexpr int kDiagnosticRecursionLimit = 1000;
}  // namespace

absl::StatusOr<Model> ImportOnnx(absl::string_view bytes,
                                 const ImportOptions& options) {
  if (static_cast<int64_t>(bytes.size()) > options.max_model_bytes ||
      bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::ResourceExhaustedError(
        absl::StrCat("model is ", bytes.size(), " bytes, over the limit of ",
                     options.max_model_bytes));
  }
  onnx::ModelProto proto;
  google::protobuf::io::CodedInputStream stream(
      reinterpret_cast<const uint8_t*>(bytes.data()),
      static_cast<int>(bytes.size()));
  stream.SetTotalBytesLimit(std::numeric_limits<int>::max());
  stream.SetRecursionLimit(kProtobufRecursionLimit);
  if (!proto.ParseFromCodedStream(&stream) || !stream.ConsumedEntireMessage()) {
    // protobuf refuses messages nested deeper than its recursion limit; a
    // second parse with a deeper limit tells that apart from corruption.
    onnx::ModelProto deep;
    google::protobuf::io::CodedInputStream retry(
        reinterpret_cast<const uint8_t*>(bytes.data()),
        static_cast<int>(bytes.size()));
    retry.SetTotalBytesLimit(std::numeric_limits<int>::max());
    retry.SetRecursionLimit(kDiagnosticRecursionLimit);
    if (deep.ParseFromCodedStream(&retry) && retry.ConsumedEntireMessage()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph: subgraphs (If/Loop/Scan bodies) are nested deeper than "
          "the ",
          kProtobufRecursionLimit,
          " message levels protobuf parses (each nested subgraph takes 3)"));
    }
    return absl::InvalidArgumentError(
        "bytes are not a valid ONNX ModelProto (truncated or corrupt)");
  }
  return ImportOnnxModel(proto, options);
}

absl::StatusOr<Model> ImportOnnxFile(const std::string& path,
                                     const ImportOptions& options) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  const std::streamoff size = in.tellg();
  if (size < 0 || size > options.max_model_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": ", static_cast<int64_t>(size),
                     " bytes, over the limit of ", options.max_model_bytes));
  }
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), size)) {
    return absl::DataLossError(absl::StrCat("cannot read ", path));
  }
  return ImportOnnx(bytes, options);
}

absl::Status BindInputShapes(
    const std::map<std::string, std::vector<int64_t>>& input_shapes,
    Graph* graph) {
  for (const auto& [name, shape] : input_shapes) {
    ValueInfo* info = nullptr;
    for (ValueInfo& in : graph->inputs) {
      if (in.name == name) info = &in;
    }
    if (info == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input shape given for '", name, "', which is not a graph input"));
    }
    for (int64_t d : shape) {
      if (d < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("input '", name, "': bound shape [",
                         absl::StrJoin(shape, ","), "] has a negative dim"));
      }
    }
    if (info->has_shape) {
      if (info->shape.size() != shape.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("input '", name, "': bound shape [",
                         absl::StrJoin(shape, ","), "] has rank ", shape.size(),
                         ", the model declares rank ", info->shape.size()));
      }
      for (size_t i = 0; i < shape.size(); ++i) {
        if (info->shape[i] >= 0 && info->shape[i] != shape[i]) {
          return absl::InvalidArgumentError(absl::StrCat(
              "input '", name, "': bound shape [", absl::StrJoin(shape, ","),
              "] differs from the declared dim ", i, " = ", info->shape[i]));
        }
      }
    }
    info->shape = shape;
    info->dim_params.assign(shape.size(), "");
    info->has_shape = true;
  }
  // Inferred shapes depended on the old (dynamic) inputs.
  graph->value_info.clear();
  return absl::OkStatus();
}

}  // namespace quantd
