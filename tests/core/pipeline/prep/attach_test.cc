// TPC attachment and the plan rules (MCT §1.3 / §3.3), on hand-built models
// with the built-in IMX500 TPCs (mct-reference §4 gives the expectations).
#include "core/pipeline/prep/attach.h"

#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/graph/onnx_import.h"
#include "core/pipeline/job/job_spec.h"
#include "core/pipeline/job/job_state.h"
#include "core/pipeline/prep/graph_prep.h"
#include "core/tpc/builtins.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// x -> Conv -> Relu -> MaxPool -> Reshape -> Gemm -> Sigmoid -> y
Model ChainModel() {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2, 4, 4});
  b.FloatInitializer("w", std::vector<float>(4 * 2 * 3 * 3, 0.1f),
                     {4, 2, 3, 3});
  b.FloatInitializer("b", {0.1f, 0.2f, 0.3f, 0.4f}, {4});
  b.Int64Initializer("shape", {1, 16}, {2});
  b.FloatInitializer("fc_w", std::vector<float>(3 * 16, 0.05f), {3, 16});
  b.FloatInitializer("fc_b", {0, 0, 0}, {3});
  b.AddNode("Conv", {"x", "w", "b"}, {"c"}, "conv").Ints("pads", {1, 1, 1, 1});
  b.AddNode("Relu", {"c"}, {"r"}, "relu");
  b.AddNode("MaxPool", {"r"}, {"p"}, "pool")
      .Ints("kernel_shape", {2, 2})
      .Ints("strides", {2, 2});
  b.AddNode("Reshape", {"p", "shape"}, {"f"}, "reshape");
  b.AddNode("Gemm", {"f", "fc_w", "fc_b"}, {"g"}, "fc").Int("transB", 1);
  b.AddNode("Sigmoid", {"g"}, {"y"}, "sigmoid");
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

// The attach options of a request with `config` and `kernel_bits`, as the
// job spec resolves them.
absl::StatusOr<AttachOptions> OptionsFor(int kernel_bits,
                                         const v1::QuantizationConfig& config) {
  v1::QuantizeRequest request;
  *request.mutable_quantization() = config;
  request.mutable_mixed_precision()->set_kernel_weights_bits(kernel_bits);
  absl::StatusOr<JobSpec> spec = ResolveJobSpec(request);
  if (!spec.ok()) return spec.status();
  return spec->attach;
}

JobState Attach(Model model, const v1::TargetPlatformCapabilities& tpc,
                int kernel_bits = 0,
                const v1::QuantizationConfig& config = {}) {
  JobState state;
  state.model = std::move(model);
  std::vector<std::string> warnings;
  absl::Status st = PrepareGraph(state.options, {}, &state.model, &warnings);
  EXPECT_TRUE(st.ok()) << st;
  absl::StatusOr<AttachOptions> options = OptionsFor(kernel_bits, config);
  EXPECT_TRUE(options.ok()) << options.status();
  if (!options.ok()) return state;
  st = AttachTpc(std::make_shared<v1::TargetPlatformCapabilities>(tpc),
                 *options, &state);
  EXPECT_TRUE(st.ok()) << st;
  return state;
}

const NodePlan& Plan(const JobState& s, const std::string& name) {
  for (size_t i = 0; i < s.model.graph.nodes.size(); ++i) {
    if (s.model.graph.nodes[i].name == name) return s.plans[i];
  }
  ADD_FAILURE() << "no node " << name;
  static NodePlan none;
  return none;
}

TEST(AttachTpc, ConvGetsSymmetricPerChannelKernelAndNoBiasQuantization) {
  JobState s = Attach(ChainModel(), tpc::Imx500Tpc("1.0"));
  const NodePlan& conv = Plan(s, "conv");
  EXPECT_EQ(conv.op_set, "Conv");
  // IMX500 kernel_base_config: SYMMETRIC 8 bit per channel; bias 32 bit off.
  ASSERT_EQ(conv.weights.size(), 1u);
  EXPECT_EQ(conv.weights[0].attr, "kernel_attr");
  EXPECT_EQ(conv.weights[0].input_index, 1);
  EXPECT_EQ(conv.weights[0].channel_axis, 0);
  EXPECT_EQ(conv.weights[0].config.weights_quantization_method(),
            v1::QUANTIZATION_METHOD_SYMMETRIC);
  EXPECT_EQ(conv.weights[0].config.weights_n_bits(), 8);
  EXPECT_TRUE(conv.weights[0].config.weights_per_channel_threshold());
}

TEST(AttachTpc, ConvReluIsFusedAndOnlyTheReluIsQuantized) {
  JobState s = Attach(ChainModel(), tpc::Imx500Tpc("1.0"));
  const NodePlan& conv = Plan(s, "conv");
  const NodePlan& relu = Plan(s, "relu");
  EXPECT_FALSE(conv.fused_group.empty());
  EXPECT_EQ(conv.fused_group, relu.fused_group);
  EXPECT_TRUE(conv.fused_inner);
  EXPECT_FALSE(conv.quantize_activation);
  EXPECT_THAT(conv.float_reason, HasSubstr("inside fused group"));
  EXPECT_TRUE(relu.quantize_activation);
  EXPECT_EQ(relu.config.activation_quantization_method(),
            v1::QUANTIZATION_METHOD_POWER_OF_TWO);
  EXPECT_EQ(relu.config.activation_n_bits(), 8);
}

TEST(AttachTpc, KeepFloatLeavesMatchingNodesUnquantized) {
  v1::QuantizationConfig config;
  config.add_keep_float()->set_node_name("fc");
  config.add_keep_float()->set_node_type("Relu");
  JobState s = Attach(ChainModel(), tpc::Imx500Tpc("1.0"), 0, config);
  // The Gemm keeps float weights; the Relu (end of the Conv+Relu fusing)
  // and the Gemm+Sigmoid group's inner node leave their outputs float.
  const NodePlan& fc = Plan(s, "fc");
  EXPECT_TRUE(fc.weights.empty());
  EXPECT_FALSE(fc.quantize_activation);
  EXPECT_THAT(fc.float_reason, HasSubstr("kept float (keep_float name:fc)"));
  const NodePlan& relu = Plan(s, "relu");
  EXPECT_FALSE(relu.quantize_activation);
  EXPECT_THAT(relu.float_reason, HasSubstr("keep_float type:Relu"));
  // Nodes no filter matches are untouched.
  EXPECT_EQ(Plan(s, "conv").weights.size(), 1u);
  EXPECT_TRUE(Plan(s, "sigmoid").quantize_activation);
  EXPECT_TRUE(s.warnings.empty());
}

TEST(AttachTpc, KeepFloatFilterMatchingNothingIsAWarning) {
  v1::QuantizationConfig config;
  config.add_keep_float()->set_name_scope("nowhere/");
  JobState s = Attach(ChainModel(), tpc::Imx500Tpc("1.0"), 0, config);
  EXPECT_THAT(s.warnings,
              ElementsAre("quantization.keep_float[0] (scope:nowhere/): "
                          "matches no node"));
}

TEST(AttachTpc, EmptyKeepFloatFilterIsRejected) {
  v1::QuantizationConfig config;
  config.add_keep_float()->set_node_name("");
  absl::Status st = OptionsFor(0, config).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("quantization.keep_float[0]: empty filter"));
}

TEST(AttachTpc, FullyConnectedSigmoidFusesAndSigmoidIsBounded) {
  JobState s = Attach(ChainModel(), tpc::Imx500Tpc("1.0"));
  const NodePlan& fc = Plan(s, "fc");
  const NodePlan& sig = Plan(s, "sigmoid");
  EXPECT_EQ(fc.op_set, "FullyConnected");
  EXPECT_TRUE(fc.fused_inner);
  EXPECT_TRUE(sig.quantize_activation);
  // FrameworkInfo: sigmoid in (0, 1) -> no-clipping selection.
  ASSERT_TRUE(sig.known_min.has_value());
  ASSERT_TRUE(sig.known_max.has_value());
  EXPECT_EQ(*sig.known_min, 0.0);
  EXPECT_EQ(*sig.known_max, 1.0);
}

TEST(AttachTpc, V1NoQuantizationOpSetsStayFloat) {
  // imx500 v1: MaxPool and Reshape are in the no-quantization op set.
  JobState s = Attach(ChainModel(), tpc::Imx500Tpc("1.0"));
  EXPECT_FALSE(Plan(s, "pool").quantize_activation);
  EXPECT_FALSE(Plan(s, "pool").preserving);
  EXPECT_FALSE(Plan(s, "reshape").quantize_activation);
}

// A body of `count` chained Relus from the outer x to `out`.
onnx::GraphProto ReluBody(const std::string& out, int count) {
  onnx::GraphProto g;
  g.set_name(out);
  std::string prev = "x";
  for (int i = 0; i < count; ++i) {
    onnx::NodeProto* n = g.add_node();
    n->set_op_type("Relu");
    n->add_input(prev);
    prev = i + 1 == count ? out : absl::StrCat(out, "_", i);
    n->add_output(prev);
  }
  onnx::ValueInfoProto* o = g.add_output();
  o->set_name(out);
  o->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  return g;
}

TEST(AttachTpc, ControlFlowBodiesAreReportedAsFloat) {
  // Only the top-level graph is quantized: the report must say that the
  // nodes of an If's branches stay float.
  OnnxModelBuilder b(13);
  b.Input("c", DType::kBool, {});
  b.Input("x", DType::kFloat, {1, 4});
  b.AddNode("If", {"c"}, {"y"}, "branch")
      .GraphAttr("then_branch", ReluBody("t", 2))
      .GraphAttr("else_branch", ReluBody("e", 1));
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok()) << m.status();
  JobState s = Attach(*m, tpc::Imx500Tpc("4.0"));
  EXPECT_THAT(Plan(s, "branch").float_reason,
              HasSubstr("subgraph 'else_branch' (1 nodes), 'then_branch' (2 "
                        "nodes) runs in float"));
}

TEST(AttachTpc, V4MaxPoolAndReshapePreserveTheirInputQuantization) {
  // imx500 v4: MaxPool and Reshape are quantization preserving.
  JobState s = Attach(ChainModel(), tpc::Imx500Tpc("4.0"));
  const NodePlan& pool = Plan(s, "pool");
  EXPECT_TRUE(pool.preserving);
  EXPECT_EQ(pool.preserved_from, "r");
  const NodePlan& reshape = Plan(s, "reshape");
  EXPECT_TRUE(reshape.preserving);
  EXPECT_EQ(reshape.preserved_from, "p");  // the shape input is constant
}

// tflite@1.0's Mul op set enables activation quantization and preserving
// together. Preserving across a Mul by a constant put x * 0.03 on x's grid
// (ppocr_rec, CER 1.0): the output gets its own parameters; a Reshape
// still preserves.
TEST(AttachTpc, TfliteMulByAConstantQuantizesItsOwnOutput) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 4});
  b.FloatInitializer("k", {0.03f}, {1});
  b.Int64Initializer("shape", {4}, {1});
  b.AddNode("Relu", {"x"}, {"r"}, "relu");
  b.AddNode("Mul", {"r", "k"}, {"m"}, "scale");
  b.AddNode("Reshape", {"m", "shape"}, {"y"}, "reshape");
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  ASSERT_TRUE(m.ok()) << m.status();
  JobState s = Attach(*m, tpc::TfliteTpc());
  const NodePlan& scale = Plan(s, "scale");
  EXPECT_EQ(scale.op_set, "Mul");
  EXPECT_FALSE(scale.preserving);
  EXPECT_TRUE(scale.quantize_activation);
  EXPECT_TRUE(scale.float_reason.empty()) << scale.float_reason;
  const NodePlan& reshape = Plan(s, "reshape");
  EXPECT_TRUE(reshape.preserving);
  EXPECT_EQ(reshape.preserved_from, "m");
}

TEST(AttachTpc, GraphInputsTakeTheDefaultConfig) {
  JobState s = Attach(ChainModel(), tpc::Imx500Tpc("1.0"));
  ASSERT_TRUE(s.input_config.has_value());
  EXPECT_EQ(s.input_config->activation_n_bits(), 8);
  EXPECT_EQ(s.input_config->activation_quantization_method(),
            v1::QUANTIZATION_METHOD_POWER_OF_TWO);
}

TEST(AttachTpc, KernelWeightsBitsPicksTheMatchingCandidate) {
  // imx500 v1 Conv candidates: 8, 4 and 2-bit kernels (base 8).
  JobState s = Attach(ChainModel(), tpc::Imx500Tpc("1.0"), 4);
  const NodePlan& conv = Plan(s, "conv");
  ASSERT_EQ(conv.weights.size(), 1u);
  EXPECT_EQ(conv.weights[0].config.weights_n_bits(), 4);
  EXPECT_EQ(conv.qco.quantization_configurations(conv.candidate_index)
                .attr_weights_configs_mapping()
                .at("kernel_attr")
                .weights_n_bits(),
            4);
}

TEST(AttachTpc, KernelWeightsBitsWithoutCandidateNamesTheNode) {
  JobState state;
  state.model = ChainModel();
  absl::StatusOr<AttachOptions> options = OptionsFor(3, {});
  ASSERT_TRUE(options.ok()) << options.status();
  absl::Status st = AttachTpc(
      std::make_shared<v1::TargetPlatformCapabilities>(tpc::Imx500Tpc("1.0")),
      *options, &state);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("node 'conv' (Conv)"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("3-bit kernel"));
}

TEST(AttachTpc, TpcSignednessIsForced) {
  v1::TargetPlatformCapabilities tpc = tpc::Imx500Tpc("1.0");
  // ReLU op set with the default config forced SIGNED.
  for (auto& set : *tpc.mutable_operator_set()) {
    if (set.name() == "ReLU") {
      *set.mutable_qc_options() = tpc.default_qco();
      for (auto& c :
           *set.mutable_qc_options()->mutable_quantization_configurations()) {
        c.set_signedness(v1::SIGNEDNESS_SIGNED);
      }
      set.mutable_qc_options()->mutable_base_config()->set_signedness(
          v1::SIGNEDNESS_SIGNED);
    }
  }
  JobState s = Attach(ChainModel(), tpc);
  const NodePlan& relu = Plan(s, "relu");
  ASSERT_TRUE(relu.forced_signed.has_value());
  EXPECT_TRUE(*relu.forced_signed);
}

TEST(AttachTpc, FuseOpQuantizationConfigQuantizesInnerNodes) {
  v1::TargetPlatformCapabilities tpc = tpc::Imx500Tpc("1.0");
  for (auto& f : *tpc.mutable_fusing_patterns()) {
    v1::OpQuantizationConfig c =
        tpc.default_qco().quantization_configurations(0);
    c.set_enable_activation_quantization(true);
    c.set_activation_quantization_method(v1::QUANTIZATION_METHOD_SYMMETRIC);
    *f.mutable_fuse_op_quantization_config() = c;
  }
  JobState s = Attach(ChainModel(), tpc);
  const NodePlan& conv = Plan(s, "conv");
  EXPECT_TRUE(conv.fused_inner);
  EXPECT_TRUE(conv.quantize_activation);
  EXPECT_EQ(conv.config.activation_quantization_method(),
            v1::QUANTIZATION_METHOD_SYMMETRIC);
}

}  // namespace
}  // namespace quantd
