#include "tests/core/pipeline/corrections/snc_test_state.h"

#include "core/graph/onnx_import.h"
#include "gtest/gtest.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {

JobState LeakyReluConvSncState(const SncConv& conv) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, conv.x_shape);
  b.FloatInitializer("w", conv.w, conv.w_shape);
  std::vector<std::string> conv_inputs = {"a", "w"};
  if (!conv.bias.empty()) {
    b.FloatInitializer("b", conv.bias,
                       {static_cast<int64_t>(conv.bias.size())});
    conv_inputs.push_back("b");
  }
  b.AddNode("LeakyRelu", {"x"}, {"a"}, "act").Float("alpha", 0.01f);
  auto node = b.AddNode("Conv", conv_inputs, {"y"}, "conv");
  if (!conv.pads.empty()) node.Ints("pads", conv.pads);
  b.Output("y", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  EXPECT_TRUE(m.ok()) << m.status();
  JobState s;
  s.model = *m;
  s.plans.resize(2);
  PlanSncActivation(0, "a", &s);
  return s;
}

void PlanSncActivation(int node, const std::string& tensor, JobState* s) {
  NodePlan& act = s->plans[node];
  act.quantize_activation = true;
  act.config.set_activation_n_bits(8);
  act.config.set_activation_quantization_method(
      v1::QUANTIZATION_METHOD_POWER_OF_TWO);
  act.activation.tensor = tensor;
  act.activation.method = v1::QUANTIZATION_METHOD_POWER_OF_TWO;
  act.activation.n_bits = 8;
  act.activation.threshold = 16.0;
  act.activation.is_signed = true;
  TensorStats& st = s->stats[tensor];
  st.min = -0.1;
  st.max = 10;
  st.histogram.edges = {-0.1, 0, 5, 10};
  st.histogram.counts = {1, 10, 5};
}

}  // namespace quantd
