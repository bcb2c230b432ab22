// The MCTQ export for each kind of quantizer (POT, symmetric and uniform
// activations; symmetric, POT, uniform and LUT weights) on quantd's example
// CNN: the matching mct_quantizers op with its attributes, and quantd's
// executor running the file like quantd's own fake quant. MCT's own export
// is the oracle in mctq_fixture_test.cc; here the oracle is quantd's fake
// quant, which tests/e2e_ptq checks against ONNX Runtime.
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/executor/executor.h"
#include "core/graph/mctq_ops.h"
#include "core/graph/onnx_export.h"
#include "core/graph/onnx_import.h"
#include "core/pipeline/export/fake_quant.h"
#include "core/pipeline/job/job_artifacts.h"
#include "core/pipeline/job/samples.h"
#include "core/tpc/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/example_model.h"

namespace quantd {
namespace {

using ::testing::HasSubstr;

// Every configuration of a TPC (default, op sets, fusing overrides).
void ForEachConfig(v1::TargetPlatformCapabilities* tpc,
                   const std::function<void(v1::OpQuantizationConfig*)>& fn) {
  auto options = [&](v1::QuantizationConfigOptions* o) {
    for (auto& c : *o->mutable_quantization_configurations()) fn(&c);
    if (o->has_base_config()) fn(o->mutable_base_config());
  };
  options(tpc->mutable_default_qco());
  for (auto& s : *tpc->mutable_operator_set()) {
    if (s.has_qc_options()) options(s.mutable_qc_options());
  }
}

class MctqExportTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(registry_.AddBuiltins().ok()); }

  v1::TargetPlatformCapabilities Builtin(const std::string& ref) {
    auto e = registry_.ResolveEntry(ref);
    EXPECT_TRUE(e.ok()) << e.status();
    return *e->tpc;
  }

  // Quantizes the example CNN with `tpc`, MCTQ only; returns the imported
  // MCTQ model (or the job's error).
  absl::StatusOr<Model> Export(const v1::TargetPlatformCapabilities& tpc,
                               int kernel_bits = 0) {
    v1::QuantizeRequest r;
    r.set_onnx_model(*ExportOnnx(MakeExampleCnn()));
    for (const auto& s : MakeExampleImages(8, 1)) {
      v1::Sample* p = r.add_calibration_samples();
      for (const auto& [name, t] : s) {
        *p->add_inputs() = TensorToSampleProto(t, name);
      }
    }
    *r.mutable_tpc()->mutable_inline_tpc() = tpc;
    r.mutable_export_options()->add_formats(v1::EXPORT_FORMAT_MCTQ);
    r.mutable_mixed_precision()->set_kernel_weights_bits(kernel_bits);
    JobContext ctx;
    ctx.registry = &registry_;
    auto result = RunQuantizeJobWithArtifacts(r, ctx, &artifacts_);
    if (!result.ok()) return result.status();
    EXPECT_TRUE(result->qdq_onnx().empty());  // MCTQ only
    return ImportOnnx(result->mctq_onnx());
  }

  // Op type -> count of mct_quantizers nodes.
  static std::map<std::string, int> Ops(const Model& m) {
    std::map<std::string, int> ops;
    for (const Node& n : m.graph.nodes) {
      if (n.domain == kMctqDomain) ++ops[n.op_type];
    }
    return ops;
  }

  // Max |MCTQ model - quantd fake quant| over the outputs, in units of the
  // output's quantization step.
  void ExpectRunsLikeFakeQuant(const Model& mctq) {
    auto fq = WithFakeQuantWeights(artifacts_.prepared_model, artifacts_.plan);
    ASSERT_TRUE(fq.ok()) << fq.status();
    auto fq_exec = Executor::Create(*std::move(fq));
    ASSERT_TRUE(fq_exec.ok()) << fq_exec.status();
    auto exec = Executor::Create(mctq);
    ASSERT_TRUE(exec.ok()) << exec.status();
    ActivationFakeQuantizer quantizer(artifacts_.plan);
    RunOptions options;
    options.rewriter = &quantizer.rewriter();
    std::map<std::string, float> step;
    for (const auto& a : artifacts_.plan.activations) step[a.tensor] = a.scale;
    for (const auto& s : MakeExampleImages(4, 3)) {
      auto want = (*fq_exec)->Run(quantizer.FakeQuantizeFeeds(s), options);
      ASSERT_TRUE(want.ok()) << want.status();
      auto got = (*exec)->Run(s);
      ASSERT_TRUE(got.ok()) << got.status();
      for (const ValueInfo& o : mctq.graph.outputs) {
        ASSERT_TRUE(step.count(o.name)) << o.name;
        auto a = got->at(o.name).span<float>();
        auto b = want->at(o.name).span<float>();
        ASSERT_EQ(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i) {
          EXPECT_LE(std::fabs(a[i] - b[i]), step[o.name] * 1.0001f)
              << o.name << "[" << i << "]";
        }
      }
    }
  }

  tpc::TpcRegistry registry_;
  JobArtifacts artifacts_;
};

TEST_F(MctqExportTest, PotActivationsAndSymmetricWeights) {
  auto m = Export(Builtin("imx500@1.0"));
  ASSERT_TRUE(m.ok()) << m.status();
  const auto ops = Ops(*m);
  EXPECT_GT(ops.count("ActivationPOTQuantizer"), 0u);
  EXPECT_GT(ops.count("WeightsSymmetricQuantizer"), 0u);
  EXPECT_EQ(ops.size(), 2u);
  for (const Node& n : m->graph.nodes) {
    if (n.domain != kMctqDomain) continue;
    EXPECT_EQ(n.GetString("mctq_version", ""), "1.5.2") << n.name;
    if (n.op_type == "WeightsSymmetricQuantizer") {
      EXPECT_EQ(n.GetInt("per_channel", -1), 1) << n.name;
      EXPECT_EQ(n.GetInt("signed", -1), 1) << n.name;
      EXPECT_EQ(n.GetInt("num_bits", -1), 8) << n.name;
      EXPECT_TRUE(n.HasAttribute("channel_axis")) << n.name;
    } else {
      const float t = n.GetFloat("threshold", 0);
      EXPECT_EQ(std::exp2(std::round(std::log2(t))), t) << n.name;
    }
  }
  ExpectRunsLikeFakeQuant(*m);
}

TEST_F(MctqExportTest, TpcWithAddMetadataGetsMctsVersionKeys) {
  v1::TargetPlatformCapabilities tpc = Builtin("imx500@1.0");
  tpc.set_add_metadata(true);
  auto m = Export(tpc);
  ASSERT_TRUE(m.ok()) << m.status();
  std::map<std::string, std::string> meta(m->metadata_props.begin(),
                                          m->metadata_props.end());
  EXPECT_EQ(meta["tpc_name"], "imx500_tpc");
  EXPECT_EQ(meta["tpc_minor_version"], "1");
  EXPECT_EQ(meta["tpc_patch_version"], "0");
  EXPECT_EQ(meta["mctq_version"], "1.5.2");
  EXPECT_TRUE(meta.count("tpc_platform_type"));
  EXPECT_TRUE(meta.count("tpc_schema"));
}

TEST_F(MctqExportTest, SymmetricActivationsUseTheSymmetricOp) {
  v1::TargetPlatformCapabilities tpc = Builtin("imx500@1.0");
  ForEachConfig(&tpc, [](v1::OpQuantizationConfig* c) {
    c->set_activation_quantization_method(v1::QUANTIZATION_METHOD_SYMMETRIC);
  });
  tpc.set_name("imx500_symmetric_activations");
  auto m = Export(tpc);
  ASSERT_TRUE(m.ok()) << m.status();
  const auto ops = Ops(*m);
  EXPECT_GT(ops.count("ActivationSymmetricQuantizer"), 0u);
  EXPECT_EQ(ops.count("ActivationPOTQuantizer"), 0u);
  ExpectRunsLikeFakeQuant(*m);
}

TEST_F(MctqExportTest, UniformActivationsAndWeights) {
  v1::TargetPlatformCapabilities tpc = Builtin("imx500@1.0");
  ForEachConfig(&tpc, [](v1::OpQuantizationConfig* c) {
    c->set_activation_quantization_method(v1::QUANTIZATION_METHOD_UNIFORM);
    for (auto& [key, a] : *c->mutable_attr_weights_configs_mapping()) {
      if (a.enable_weights_quantization()) {
        a.set_weights_quantization_method(v1::QUANTIZATION_METHOD_UNIFORM);
      }
    }
  });
  tpc.set_name("imx500_uniform");
  auto m = Export(tpc);
  ASSERT_TRUE(m.ok()) << m.status();
  const auto ops = Ops(*m);
  EXPECT_GT(ops.count("ActivationUniformQuantizer"), 0u);
  EXPECT_GT(ops.count("WeightsUniformQuantizer"), 0u);
  for (const Node& n : m->graph.nodes) {
    if (n.op_type == "ActivationUniformQuantizer") {
      EXPECT_LT(n.GetFloat("min_range", 1), n.GetFloat("max_range", 0));
      EXPECT_FALSE(n.HasAttribute("signed")) << n.name;
    }
    if (n.op_type == "WeightsUniformQuantizer") {
      EXPECT_EQ(n.inputs.size(), 3u) << n.name;  // W, min, max
    }
  }
  ExpectRunsLikeFakeQuant(*m);
}

TEST_F(MctqExportTest, LutWeightsUseTheLutOp) {
  // The LUT TPC's 4-bit kernel candidates are LUT_SYM (8 bits: symmetric).
  auto m = Export(Builtin("imx500@1.0_lut"), 4);
  ASSERT_TRUE(m.ok()) << m.status();
  const auto ops = Ops(*m);
  int lut = 0;
  for (const Node& n : m->graph.nodes) {
    if (n.op_type != "WeightsLUTSymmetricQuantizer" &&
        n.op_type != "WeightsLUTPOTQuantizer") {
      continue;
    }
    ++lut;
    EXPECT_EQ(n.inputs.size(), 3u) << n.name;  // W, lut_values, threshold
    EXPECT_EQ(n.GetInt("lut_values_bitwidth", 0), 8) << n.name;
    EXPECT_FLOAT_EQ(n.GetFloat("eps", 0), 1e-8f) << n.name;
    EXPECT_TRUE(n.HasAttribute("input_rank")) << n.name;
  }
  EXPECT_GT(lut, 0);
  ExpectRunsLikeFakeQuant(*m);
}

TEST_F(MctqExportTest, LutActivationsHaveNoOpAndAreRejected) {
  v1::TargetPlatformCapabilities tpc = Builtin("imx500@1.0");
  ForEachConfig(&tpc, [](v1::OpQuantizationConfig* c) {
    c->set_activation_quantization_method(
        v1::QUANTIZATION_METHOD_LUT_POT_QUANTIZER);
    c->set_activation_n_bits(4);
    c->clear_supported_input_activation_n_bits();
    c->add_supported_input_activation_n_bits(4);
  });
  tpc.set_name("imx500_lut_activations");
  auto m = Export(tpc);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()),
              HasSubstr("has no mct_quantizers 1.5.2 ONNX op"));
}

}  // namespace
}  // namespace quantd
