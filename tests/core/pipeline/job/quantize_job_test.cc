// The whole job on the example CNN: results, QDQ agreement with quantd's
// fake-quant execution, determinism, and the errors a client sees.
#include "core/pipeline/job/quantize_job.h"

#include <bit>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "clients/batch/proto_output.h"
#include "core/executor/executor.h"
#include "core/graph/onnx_export.h"
#include "core/graph/onnx_import.h"
#include "core/pipeline/export/fake_quant.h"
#include "core/pipeline/export/qdq_lowering.h"
#include "core/pipeline/job/job_artifacts.h"
#include "core/pipeline/job/samples.h"
#include "core/report/report.h"
#include "core/tpc/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/data/onnx/model_builder.h"
#include "tests/testing/example_model.h"
#include "tests/testing/job_fixture.h"

namespace quantd {
namespace {

using ::testing::HasSubstr;

v1::QuantizeRequest ExampleRequest(const std::string& tpc = "imx500@4.0") {
  v1::QuantizeRequest r;
  r.set_onnx_model(*ExportOnnx(MakeExampleCnn()));
  for (const auto& s : MakeExampleImages(16, 1)) {
    v1::Sample* p = r.add_calibration_samples();
    for (const auto& [name, t] : s)
      *p->add_inputs() = TensorToSampleProto(t, name);
  }
  for (const auto& s : MakeExampleImages(8, 2)) {
    v1::Sample* p = r.add_evaluation_samples();
    for (const auto& [name, t] : s)
      *p->add_inputs() = TensorToSampleProto(t, name);
  }
  r.mutable_tpc()->set_name(tpc);
  return r;
}

class RecordingSink : public ProgressSink {
 public:
  void Report(const Progress& p) override {
    absl::MutexLock l(&mu_);
    stages_.insert(p.stage);
  }
  std::set<std::string> stages() {
    absl::MutexLock l(&mu_);
    return stages_;
  }

 private:
  absl::Mutex mu_;
  std::set<std::string> stages_;
};

class QuantizeJobTest : public testing::BuiltinTpcJobTest {};

std::string WithoutTimings(const std::string& report_json) {
  auto j = nlohmann::json::parse(report_json);
  j.erase("timings_seconds");
  return j.dump();
}

TEST_F(QuantizeJobTest, ExampleCnnQuantizesAndKeepsTheClassifierOutput) {
  auto result = Run(ExampleRequest());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->qdq_onnx().empty());
  EXPECT_EQ(result->tpc(), "imx500@4.0");
  EXPECT_GT(result->quantized_graph().nodes_size(), 0);
  // 8-bit weights and activations on a small CNN: the softmax output keeps
  // well above 20 dB of SQNR.
  EXPECT_GT(result->output_sqnr_db(), 20.0);
  auto report = nlohmann::json::parse(result->report_json());
  ASSERT_EQ(report["outputs"].size(), 1u);
  EXPECT_GE(report["outputs"][0]["top1_agreement"].get<double>(), 0.75);
}

// Without evaluation samples the report evaluates on the first 16
// calibration samples (report_samples 0), all of them (-1) or the first N;
// the figures equal those of a request that sends those samples as its
// evaluation set.
TEST_F(QuantizeJobTest, ReportEvaluatesOnABoundedCalibrationSubset) {
  v1::QuantizeRequest r = ExampleRequest();
  r.clear_evaluation_samples();
  for (const auto& s : MakeExampleImages(4, 3)) {
    v1::Sample* p = r.add_calibration_samples();
    for (const auto& [name, t] : s) {
      *p->add_inputs() = TensorToSampleProto(t, name);
    }
  }
  ASSERT_EQ(r.calibration_samples_size(), 20);
  const auto evaluated = [&](int report_samples) {
    v1::QuantizeRequest q = r;
    q.set_report_samples(report_samples);
    auto result = Run(q);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return -1;
    return nlohmann::json::parse(result->report_json())
        .at("num_evaluation_samples")
        .get<int>();
  };
  EXPECT_EQ(evaluated(0), 16);
  EXPECT_EQ(evaluated(-1), 20);
  EXPECT_EQ(evaluated(5), 5);

  v1::QuantizeRequest five = r;
  five.set_report_samples(5);
  v1::QuantizeRequest explicit_five = r;
  for (int i = 0; i < 5; ++i) {
    *explicit_five.add_evaluation_samples() = r.calibration_samples(i);
  }
  auto a = Run(five);
  auto b = Run(explicit_five);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->output_sqnr_db(), b->output_sqnr_db());
  EXPECT_EQ(WithoutTimings(a->report_json()), WithoutTimings(b->report_json()));

  r.set_report_samples(-2);
  EXPECT_THAT(Run(r).status().message(), HasSubstr("report_samples: must be"));
}

TEST_F(QuantizeJobTest, EveryConvKernelIsQuantizedPerChannel) {
  auto result = Run(ExampleRequest());
  ASSERT_TRUE(result.ok()) << result.status();
  int convs = 0;
  for (const auto& n : result->quantized_graph().nodes()) {
    if (n.op_type() != "Conv") continue;
    ++convs;
    ASSERT_GE(n.weights_size(), 1) << n.name();
    EXPECT_EQ(n.weights(0).attr(), "kernel_attr");
    EXPECT_TRUE(n.weights(0).per_channel());
    EXPECT_EQ(n.weights_bits(), 8);
  }
  // BN folded into conv1, linear collapsing cannot merge through Relu.
  EXPECT_EQ(convs, 3);
}

TEST_F(QuantizeJobTest, QdqModelEqualsFakeQuantExecutionWithinOneStep) {
  JobContext ctx;
  ctx.registry = &registry_;
  JobArtifacts artifacts;
  auto result = RunQuantizeJobWithArtifacts(ExampleRequest(), ctx, &artifacts);
  ASSERT_TRUE(result.ok()) << result.status();
  // quantd's fake-quant execution of the plan ...
  auto fq_model =
      WithFakeQuantWeights(artifacts.prepared_model, artifacts.plan);
  ASSERT_TRUE(fq_model.ok()) << fq_model.status();
  auto fq_exec = Executor::Create(*std::move(fq_model));
  ASSERT_TRUE(fq_exec.ok()) << fq_exec.status();
  ActivationFakeQuantizer quantizer(artifacts.plan);
  RunOptions fq_options;
  fq_options.rewriter = &quantizer.rewriter();
  // ... against the exported QDQ model run by quantd's Q/DQ kernels (ONNX
  // Runtime runs the same comparison in tests/e2e_ptq).
  auto qdq = ImportOnnx(result->qdq_onnx());
  ASSERT_TRUE(qdq.ok()) << qdq.status();
  auto qdq_exec = Executor::Create(*std::move(qdq));
  ASSERT_TRUE(qdq_exec.ok()) << qdq_exec.status();
  float step = 0;
  for (const auto& a : artifacts.plan.activations) {
    if (a.tensor == "probs") step = a.scale;
  }
  ASSERT_GT(step, 0);
  for (const auto& s : MakeExampleImages(4, 3)) {
    auto expected = (*fq_exec)->Run(quantizer.FakeQuantizeFeeds(s), fq_options);
    ASSERT_TRUE(expected.ok()) << expected.status();
    auto actual = (*qdq_exec)->Run(s);
    ASSERT_TRUE(actual.ok()) << actual.status();
    auto e = expected->at("probs").span<float>();
    auto a = actual->at("probs").span<float>();
    ASSERT_EQ(e.size(), a.size());
    for (size_t i = 0; i < e.size(); ++i) {
      EXPECT_LE(std::fabs(e[i] - a[i]), step * 1.0001f) << "element " << i;
    }
  }
}

// weight_storage UINT8 stores the Conv kernels as uint8 (integers and zero
// points + 128) and nothing else differently: the DequantizeLinear of each
// kernel gives the same floats, so both QDQ models compute the same bits;
// the int32 biases stay.
TEST_F(QuantizeJobTest, Uint8WeightStorageStoresTheSameKernels) {
  auto int8 = Run(ExampleRequest());
  v1::QuantizeRequest r = ExampleRequest();
  r.mutable_export_options()->set_weight_storage(v1::WEIGHT_STORAGE_UINT8);
  auto uint8 = Run(r);
  ASSERT_TRUE(int8.ok()) << int8.status();
  ASSERT_TRUE(uint8.ok()) << uint8.status();
  auto a = ImportOnnx(int8->qdq_onnx());
  auto b = ImportOnnx(uint8->qdq_onnx());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  // The dtypes of what each Conv's inputs dequantize.
  auto conv_input_dtypes = [](const Model& m) {
    std::map<std::string, const Node*> producer;
    for (const Node& n : m.graph.nodes) {
      for (const std::string& o : n.outputs) producer[o] = &n;
    }
    std::vector<std::string> out;
    for (const Node& n : m.graph.nodes) {
      if (n.op_type != "Conv") continue;
      for (size_t i = 1; i < n.inputs.size(); ++i) {
        const Node* dq = producer.at(n.inputs[i]);
        EXPECT_EQ(dq->op_type, "DequantizeLinear") << n.name;
        const Tensor* t = m.graph.FindInitializer(dq->inputs[0]);
        out.push_back(t == nullptr ? "?" : DTypeName(t->dtype()));
      }
    }
    return out;
  };
  EXPECT_THAT(conv_input_dtypes(*a),
              ::testing::ElementsAre("int8", "int32", "int8", "int32", "int8",
                                     "int32"));
  EXPECT_THAT(conv_input_dtypes(*b),
              ::testing::ElementsAre("uint8", "int32", "uint8", "int32",
                                     "uint8", "int32"));
  auto ea = Executor::Create(*std::move(a));
  auto eb = Executor::Create(*std::move(b));
  ASSERT_TRUE(ea.ok() && eb.ok());
  for (const auto& s : MakeExampleImages(4, 5)) {
    auto ya = (*ea)->Run(s);
    auto yb = (*eb)->Run(s);
    ASSERT_TRUE(ya.ok() && yb.ok());
    auto pa = ya->at("probs").span<float>();
    auto pb = yb->at("probs").span<float>();
    ASSERT_EQ(pa.size(), pb.size());
    for (size_t i = 0; i < pa.size(); ++i) {
      EXPECT_EQ(std::bit_cast<uint32_t>(pa[i]), std::bit_cast<uint32_t>(pb[i]));
    }
  }
}

TEST_F(QuantizeJobTest, SameRequestGivesIdenticalBytes) {
  auto a = Run(ExampleRequest());
  auto b = Run(ExampleRequest());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->qdq_onnx(), b->qdq_onnx());
  EXPECT_EQ(SerializeDeterministic(a->quantized_graph()),
            SerializeDeterministic(b->quantized_graph()));
  EXPECT_EQ(*ToDeterministicJson(a->quantized_graph()),
            *ToDeterministicJson(b->quantized_graph()));
  EXPECT_EQ(WithoutTimings(a->report_json()), WithoutTimings(b->report_json()));
}

TEST_F(QuantizeJobTest, ThreadCountDoesNotChangeTheResult) {
  ThreadPool pool(2);
  auto serial = Run(ExampleRequest());
  auto parallel = Run(ExampleRequest(), {.pool = &pool});
  ASSERT_TRUE(serial.ok()) << serial.status();
  ASSERT_TRUE(parallel.ok()) << parallel.status();
  EXPECT_EQ(serial->qdq_onnx(), parallel->qdq_onnx());
  EXPECT_EQ(SerializeDeterministic(serial->quantized_graph()),
            SerializeDeterministic(parallel->quantized_graph()));
  EXPECT_EQ(WithoutTimings(serial->report_json()),
            WithoutTimings(parallel->report_json()));
}

// Without evaluation samples the report reuses calibration's float values
// (kept_float_values.h); 1 and 3 threads give the same bytes.
TEST_F(QuantizeJobTest, ThreadCountDoesNotChangeTheCalibrationSubsetReport) {
  ThreadPool pool(2);
  v1::QuantizeRequest r = ExampleRequest();
  r.clear_evaluation_samples();
  auto serial = Run(r);
  auto parallel = Run(r, {.pool = &pool});
  ASSERT_TRUE(serial.ok()) << serial.status();
  ASSERT_TRUE(parallel.ok()) << parallel.status();
  EXPECT_EQ(serial->qdq_onnx(), parallel->qdq_onnx());
  EXPECT_EQ(WithoutTimings(serial->report_json()),
            WithoutTimings(parallel->report_json()));
}

TEST_F(QuantizeJobTest, ProgressCoversEveryStage) {
  RecordingSink sink;
  auto result = Run(ExampleRequest(), {.sink = &sink});
  ASSERT_TRUE(result.ok()) << result.status();
  for (const char* stage :
       {"import", "prepare", "calibrate", "select", "export", "report"}) {
    EXPECT_TRUE(sink.stages().count(stage)) << stage;
  }
}

TEST_F(QuantizeJobTest, WrongSampleShapeNamesSampleAndInput) {
  v1::QuantizeRequest r = ExampleRequest();
  *r.mutable_calibration_samples(3)->mutable_inputs(0) =
      TensorToSampleProto(Tensor(DType::kFloat, {1, 3, 8, 8}), "image");
  auto result = Run(r);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("calibration_samples[3] input 'image': dim 2 is 8"));
}

TEST_F(QuantizeJobTest, ZeroSamplesIsInvalid) {
  v1::QuantizeRequest r = ExampleRequest();
  r.clear_calibration_samples();
  auto result = Run(r);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("calibration_samples"));
}

TEST_F(QuantizeJobTest, UnknownTpcIsNotFound) {
  auto result = Run(ExampleRequest("nosuchchip@1.0"));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound);
}

// Mixed precision runs (tests/core/pipeline/mixed_precision/mp_stage_test.cc);
// only its Hessian distance weighting is not implemented.
TEST_F(QuantizeJobTest, MixedPrecisionHessianWeightingIsRejected) {
  v1::QuantizeRequest r = ExampleRequest();
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_weights_memory_bytes(0.5);
  r.mutable_mixed_precision()->set_distance_weighting_method(
      v1::DISTANCE_WEIGHTING_HESSIAN);
  auto result = Run(r);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("HESSIAN"));
}

TEST_F(QuantizeJobTest, GptqHessianWeightingIsRejectedAsUnimplemented) {
  v1::QuantizeRequest r = ExampleRequest();
  r.mutable_gptq()->set_enabled(true);
  r.mutable_gptq()->set_use_hessian_based_weights(true);
  auto result = Run(r);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("gptq.use_hessian_based_weights"));
}

// A filter that matches no node is a warning in the report; with strict,
// the job fails naming both filters instead of running without them.
TEST_F(QuantizeJobTest, StrictFailsOnFiltersThatMatchNoNode) {
  v1::QuantizeRequest r = ExampleRequest();
  r.mutable_quantization()->add_keep_float()->set_node_name("nosuch");
  v1::BitWidthOverride* o =
      r.mutable_mixed_precision()->add_bit_width_overrides();
  o->mutable_filter()->set_name_scope("nowhere/");
  o->set_target(v1::BitWidthOverride::TARGET_WEIGHTS);
  o->set_bits(4);
  auto warned = Run(r);
  ASSERT_TRUE(warned.ok()) << warned.status();
  EXPECT_THAT(warned->report_json(),
              HasSubstr("quantization.keep_float[0] (name:nosuch): matches "
                        "no node"));
  EXPECT_THAT(warned->report_json(),
              HasSubstr("mixed_precision.bit_width_overrides[0] "
                        "(scope:nowhere/): matches no quantized node"));

  r.set_strict(true);
  auto strict = Run(r);
  EXPECT_EQ(strict.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(strict.status().message(),
            "quantization.keep_float[0] (name:nosuch), "
            "mixed_precision.bit_width_overrides[0] (scope:nowhere/): matches "
            "no node (strict)");
}

TEST_F(QuantizeJobTest, CancelledTokenStopsTheJob) {
  CancellationToken cancel;
  cancel.Cancel();
  auto result = Run(ExampleRequest(), {.cancel = &cancel});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
}

TEST_F(QuantizeJobTest, FourBitWeightsExportAtOpset21) {
  v1::QuantizeRequest r = ExampleRequest("imx500@1.0");
  r.mutable_mixed_precision()->set_kernel_weights_bits(4);
  auto result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  auto qdq = ImportOnnx(result->qdq_onnx());
  ASSERT_TRUE(qdq.ok()) << qdq.status();
  EXPECT_EQ(qdq->DefaultOpset(), 21);
  EXPECT_FALSE(qdq->graph.sub_byte_types.empty());
}

TEST_F(QuantizeJobTest, EveryFloatOutputOfASplitIsQuantized) {
  // x -> Relu -> Split into two halves -> both are model outputs. IMX500's
  // SplitChunk preserves its input's quantization: both halves carry the
  // Relu's grid.
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 4});
  b.Int64Initializer("halves", {2, 2}, {2});
  b.AddNode("Relu", {"x"}, {"r"}, "relu");
  b.AddNode("Split", {"r", "halves"}, {"y0", "y1"}, "split").Int("axis", 1);
  b.Output("y0", DType::kFloat);
  b.Output("y1", DType::kFloat);
  v1::QuantizeRequest r;
  r.set_onnx_model(b.Serialize());
  for (int i = 0; i < 4; ++i) {
    const float v = static_cast<float>(i);
    Tensor t = Tensor::FromVector<float>({v - 1, v, v + 1, v + 2}, {1, 4});
    *r.add_calibration_samples()->add_inputs() = TensorToSampleProto(t, "x");
  }
  r.mutable_tpc()->set_name("imx500@4.1");
  auto result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  const v1::QuantizedNode* split = nullptr;
  const v1::QuantizedNode* relu = nullptr;
  for (const auto& n : result->quantized_graph().nodes()) {
    if (n.op_type() == "Split") split = &n;
    if (n.op_type() == "Relu") relu = &n;
  }
  ASSERT_NE(split, nullptr);
  ASSERT_NE(relu, nullptr);
  ASSERT_EQ(relu->activations_size(), 1);
  ASSERT_EQ(split->activations_size(), 2);
  EXPECT_EQ(split->activations(0).tensor(), "y0");
  EXPECT_EQ(split->activations(1).tensor(), "y1");
  EXPECT_EQ(split->activations(1).scale(), relu->activations(0).scale());
  EXPECT_EQ(split->activations(1).preserved_from(), "r");
}

// Layer names come from the user's ONNX model (proto2 strings: any bytes).
// report.json must still be written, with U+FFFD for the bad bytes, not end
// the process with nlohmann's UTF-8 exception.
TEST(ReportJsonTest, NodeNamesThatAreNotUtf8BecomeReplacementCharacters) {
  ReportData report;
  report.model_name = "m\xc3";
  LayerReport layer;
  layer.node = std::string("conv\x8e\xff");
  layer.op_type = "Conv";
  report.layers.push_back(layer);
  std::string json;
  ASSERT_NO_THROW(json = ReportToJson(report));
  const auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["layers"][0]["node"], "conv\xef\xbf\xbd\xef\xbf\xbd");
}

// The sensitivity analysis: a row per node with quantized
// weights or outputs, most sensitive first, the same bytes whatever the
// thread count, under its own progress stage.
TEST_F(QuantizeJobTest, SensitivityAnalysisCoversEveryQuantizedLayer) {
  v1::QuantizeRequest r = ExampleRequest();
  r.set_sensitivity_analysis(true);
  RecordingSink sink;
  auto serial = Run(r, {.sink = &sink});
  ASSERT_TRUE(serial.ok()) << serial.status();
  EXPECT_TRUE(sink.stages().count("analyze"));
  auto report = nlohmann::json::parse(serial->report_json());
  std::set<std::string> quantized;
  for (const auto& l : report["layers"]) {
    if (l["weights_bits"].get<int>() > 0 ||
        l["activation_bits"].get<int>() > 0) {
      quantized.insert(l["node"].get<std::string>());
    }
  }
  std::set<std::string> analysed;
  double previous = -1e9;
  for (const auto& row : report["sensitivity"]) {
    analysed.insert(row["node"].get<std::string>());
    const double q = row["sqnr_only_quantized_db"].is_number()
                         ? row["sqnr_only_quantized_db"].get<double>()
                         : 1e9;
    EXPECT_GE(q, previous) << row["node"];
    previous = q;
  }
  EXPECT_FALSE(analysed.empty());
  EXPECT_EQ(analysed, quantized);
  ThreadPool pool(3);
  auto parallel = Run(r, {.pool = &pool});
  ASSERT_TRUE(parallel.ok()) << parallel.status();
  EXPECT_EQ(WithoutTimings(parallel->report_json()),
            WithoutTimings(serial->report_json()));
}

// The default method is the estimate (only-quantized figures, no
// only-float one); EXACT gives both figures of the cone runs.
TEST_F(QuantizeJobTest, SensitivityAnalysisMethodIsInEveryRow) {
  v1::QuantizeRequest r = ExampleRequest();
  r.set_sensitivity_analysis(true);
  auto estimated = Run(r);
  r.set_sensitivity_analysis_method(v1::SENSITIVITY_ANALYSIS_METHOD_EXACT);
  auto exact = Run(r);
  ASSERT_TRUE(estimated.ok()) << estimated.status();
  ASSERT_TRUE(exact.ok()) << exact.status();
  const auto e = nlohmann::json::parse(estimated->report_json());
  const auto x = nlohmann::json::parse(exact->report_json());
  ASSERT_EQ(e["sensitivity"].size(), x["sensitivity"].size());
  for (const auto& row : e["sensitivity"]) {
    EXPECT_EQ(row["method"], "estimate");
    EXPECT_TRUE(row["sqnr_only_float_db"].is_null());
  }
  for (const auto& row : x["sensitivity"]) {
    EXPECT_EQ(row["method"], "exact");
    EXPECT_TRUE(row["sqnr_only_float_db"].is_number()) << row.dump();
  }
}

// A model with an op that has no backward pass (Neg here): the default
// falls back to the exact analysis with a warning naming the node; asking
// for the estimate fails with UNIMPLEMENTED naming it.
TEST_F(QuantizeJobTest, SensitivityEstimateWithoutABackwardPass) {
  Model m = MakeExampleCnn();
  Graph& g = m.graph;
  const std::string input = g.inputs[0].name;
  for (Node& n : g.nodes) {
    for (std::string& in : n.inputs) {
      if (in == input) in = "negated_twice";
    }
  }
  Node first, second;
  first.op_type = second.op_type = "Neg";
  first.name = "neg_a";
  first.inputs = {input};
  first.outputs = {"negated"};
  second.name = "neg_b";
  second.inputs = {"negated"};
  second.outputs = {"negated_twice"};
  g.nodes.insert(g.nodes.begin(), {first, second});
  v1::QuantizeRequest r = ExampleRequest();
  r.set_onnx_model(*ExportOnnx(m));
  r.set_sensitivity_analysis(true);
  auto fallback = Run(r);
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  const auto report = nlohmann::json::parse(fallback->report_json());
  for (const auto& row : report["sensitivity"]) {
    EXPECT_EQ(row["method"], "exact");
  }
  bool warned = false;
  for (const auto& w : report["warnings"]) {
    const std::string text = w.get<std::string>();
    warned |= text.find("sensitivity analysis: exact") != std::string::npos &&
              text.find("'neg_a' (Neg)") != std::string::npos;
  }
  EXPECT_TRUE(warned) << report["warnings"].dump();
  r.set_sensitivity_analysis_method(v1::SENSITIVITY_ANALYSIS_METHOD_ESTIMATE);
  auto refused = Run(r);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(refused.status().message(), HasSubstr("(Neg)"));
}

}  // namespace
}  // namespace quantd
