// Writes the generated part of the fuzz seed corpora into DIR/<target>/:
// small ONNX models, QuantizeRequests, Prune and GenerateData requests
// (side_requests: a 0 or 1 byte first), every built-in TPC in the three
// formats tpc_fuzzer reads, .npy files of each dtype numpy knows.
// scripts/fuzz.sh adds ONNX's own test data and the MCT fixture TPCs.
//   make_seeds DIR
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/graph/tensor.h"
#include "core/io/npy.h"
#include "core/tpc/builtins.h"
#include "core/tpc/json_io.h"
#include "google/protobuf/text_format.h"
#include "quantd/v1/data_generation.pb.h"
#include "quantd/v1/pruning.pb.h"
#include "tests/data/onnx/model_builder.h"
#include "tests/integration/test_jobs.h"

namespace {

namespace fs = std::filesystem;

void Write(const fs::path& dir, const std::string& name,
           const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary);
  out << bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds DIR\n");
    return 2;
  }
  const fs::path root = argv[1];
  using quantd::DType;
  using quantd::Tensor;

  quantd::ConvSpec conv;
  conv.input_shape = {1, 2, 4, 4};
  conv.weight = Tensor::FromVector<float>(
      std::vector<float>(3 * 2 * 3 * 3, 0.25f), {3, 2, 3, 3});
  conv.bias = Tensor::FromVector<float>({0.5f, -1.0f, 2.0f}, {3});
  conv.pads = {1, 1, 1, 1};
  const Tensor ones = Tensor::FromVector<float>({1, 1, 1}, {3});
  const Tensor zeros = Tensor::FromVector<float>({0, 0, 0}, {3});
  std::vector<std::string> models = {
      quantd::MakeConvModel(conv).SerializeAsString(),
      quantd::MakeConvBnReluModel(conv, ones, zeros, zeros, ones, 1e-5f)
          .SerializeAsString(),
      quantd::MakeGemmModel(
          2, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3}),
          Tensor::FromVector<float>({0, 1}, {2}))
          .SerializeAsString(),
      quantd::MakeUnaryModel("Relu", {1, 8}).SerializeAsString(),
      quantd::MakeUnaryModel("Sigmoid", {-1, 4}, 17).SerializeAsString(),
  };
  for (size_t i = 0; i < models.size(); ++i) {
    Write(root / "onnx_import", "model_" + std::to_string(i), models[i]);
  }

  std::vector<quantd::v1::QuantizeRequest> requests = {
      quantd::testing::SmallJob("seed-small"),
      quantd::testing::ConvJob(2, 6, 3, 2, "seed-conv"),
  };
  quantd::v1::QuantizeRequest by_ref;
  by_ref.set_model_ref(std::string(64, 'a'));
  by_ref.set_samples_ref(std::string(64, 'b'));
  by_ref.mutable_tpc()->set_name("imx500@4");
  requests.push_back(by_ref);
  quantd::v1::QuantizeRequest inline_tpc = requests[0];
  *inline_tpc.mutable_tpc()->mutable_inline_tpc() =
      quantd::tpc::BuiltinTpcs().front().tpc;
  requests.push_back(inline_tpc);
  for (size_t i = 0; i < requests.size(); ++i) {
    Write(root / "quantize_request", "request_" + std::to_string(i),
          requests[i].SerializeAsString());
  }

  // side_requests: a PruneRequest (0) and a GenerateDataRequest (1) on the
  // Conv -> BatchNorm -> Relu model, the former with the small job's samples.
  quantd::v1::PruneRequest prune;
  prune.set_onnx_model(models[1]);
  prune.mutable_tpc()->set_name("imx500@4");
  *prune.mutable_calibration_samples() = requests[1].calibration_samples();
  prune.set_weights_memory_fraction(0.5);
  Write(root / "side_requests", "prune", '\0' + prune.SerializeAsString());
  quantd::v1::GenerateDataRequest generate;
  generate.set_onnx_model(models[1]);
  generate.set_count(2);
  generate.set_batch_size(2);
  generate.set_iterations(6);
  generate.set_extra_pixels(2);
  Write(root / "side_requests", "generate",
        '\1' + generate.SerializeAsString());
  // Each wrong in one field: refused by validation, option decoding or the
  // input's geometry.
  quantd::v1::PruneRequest nan_fraction = prune;
  nan_fraction.set_weights_memory_fraction(std::nan(""));
  Write(root / "side_requests", "prune_nan_fraction",
        '\0' + nan_fraction.SerializeAsString());
  quantd::v1::GenerateDataRequest bad_statistics = generate;
  bad_statistics.set_statistics_json(R"({"bn": {"mean": [1e999, "x"]}})");
  quantd::v1::GenerateDataRequest wrong_shape = generate;
  for (int64_t d : {1, 4, 16384, 16384}) wrong_shape.add_shape(d);
  quantd::v1::GenerateDataRequest inverted = generate;
  inverted.add_input_min(1);
  inverted.add_input_max(-1);
  for (const auto& [name, r] :
       {std::pair{"generate_bad_statistics", bad_statistics},
        std::pair{"generate_wrong_shape", wrong_shape},
        std::pair{"generate_inverted_range", inverted}}) {
    Write(root / "side_requests", name, '\1' + r.SerializeAsString());
  }

  for (const quantd::tpc::BuiltinTpc& builtin : quantd::tpc::BuiltinTpcs()) {
    const std::string name = builtin.name + "_" + builtin.version;
    std::string text;
    google::protobuf::TextFormat::PrintToString(builtin.tpc, &text);
    Write(root / "tpc", name + ".json",
          std::string(1, '\0') + quantd::tpc::TpcToJson(builtin.tpc));
    Write(root / "tpc", name + ".textproto", std::string(1, '\1') + text);
    Write(root / "tpc", name + ".binpb",
          std::string(1, '\2') + builtin.tpc.SerializeAsString());
  }

  const std::vector<Tensor> tensors = {
      Tensor::FromVector<float>({1.5f, -2.0f, 0.0f, 3.25f}, {2, 2}),
      Tensor::FromVector<uint8_t>({0, 1, 255}, {3}),
      Tensor::FromVector<int8_t>({-128, 0, 127}, {3, 1}),
      Tensor::FromVector<int64_t>({7}, {}),
      Tensor::FromVector<double>({0.5, 1e300}, {1, 2}),
      Tensor::FromVector<int32_t>({}, {0, 3}),
  };
  for (size_t i = 0; i < tensors.size(); ++i) {
    auto bytes = quantd::SerializeNpy(tensors[i]);
    if (bytes.ok()) {
      Write(root / "npy", "tensor_" + std::to_string(i) + ".npy", *bytes);
    }
  }
  return 0;
}
