// The Prune and GenerateData services' request handling up to admission, on
// a serialized request: the first byte picks the message (even: PruneRequest,
// odd: GenerateDataRequest), the rest is parsed as it. What the servers run
// before any heavy work must refuse bad requests with a bounded message and
// never crash: the cheap checks, then (for a request that passes them) the
// option decoding, the model import and the memory estimates.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/datagen/data_generation.h"
#include "core/datagen/generate_job.h"
#include "core/graph/onnx_import.h"
#include "core/pipeline/memory/job_memory.h"
#include "core/pruning/prune_job.h"
#include "quantd/v1/data_generation.pb.h"
#include "quantd/v1/pruning.pb.h"
#include "tests/fuzz/request_checks.h"

namespace {

using quantd::fuzz::CheckStatusMessageFits;

void Prune(const uint8_t* data, size_t size) {
  quantd::v1::PruneRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  const quantd::JobLimits limits = quantd::fuzz::SmallJobLimits();
  const absl::Status valid = quantd::ValidatePruneRequest(request, limits);
  CheckStatusMessageFits(valid);
  if (!valid.ok()) return;
  // The estimate parses the model (and any generated-calibration request).
  if (quantd::EstimatePruneMemoryBytes(request, limits, 2) < 0)
    __builtin_trap();
}

void GenerateData(const uint8_t* data, size_t size) {
  quantd::v1::GenerateDataRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  const absl::Status valid =
      quantd::datagen::ValidateGenerateDataRequest(request, 64);
  CheckStatusMessageFits(valid);
  if (!valid.ok()) return;
  // RunGenerateDataJob's steps before the images are optimised.
  auto options = quantd::datagen::DataGenOptionsFromRequest(request);
  if (!options.ok()) {
    CheckStatusMessageFits(options.status());
    return;
  }
  quantd::ImportOptions import;
  import.max_model_bytes = int64_t{1} << 20;
  import.max_nodes = 4096;
  import.max_tensor_bytes = int64_t{1} << 24;
  auto model = quantd::ImportOnnx(request.onnx_model(), import);
  if (!model.ok()) {
    CheckStatusMessageFits(model.status());
    return;
  }
  std::string input;
  const auto geometry =
      quantd::datagen::InputGeometry(model->graph, *options, &input);
  if (!geometry.ok()) {
    CheckStatusMessageFits(geometry.status());
    return;
  }
  if (quantd::EstimateGenerateMemoryBytes(*model, *options, 2) < 0) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 0) {
    Prune(data + 1, size - 1);
  } else {
    GenerateData(data + 1, size - 1);
  }
  return 0;
}
