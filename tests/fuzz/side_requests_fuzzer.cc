// The Prune and GenerateData services' request handling, on a serialized
// request: the first byte picks the message (even: PruneRequest, odd:
// GenerateDataRequest), the rest is parsed as it. What the servers run
// before any heavy work must refuse bad requests with a bounded message and
// never crash: the cheap checks, then (for a request that passes them) the
// option decoding, the model import and the memory estimates. Past
// admission, a request whose estimate fits a small budget runs as the job
// itself (a few optimisation steps, a deadline of a second): it must end
// with a bounded error or a result without NaN.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/time/clock.h"
#include "core/datagen/data_generation.h"
#include "core/datagen/generate_job.h"
#include "core/graph/onnx_import.h"
#include "core/pipeline/memory/job_memory.h"
#include "core/pruning/prune_job.h"
#include "core/runtime/cancellation.h"
#include "core/tpc/registry.h"
#include "quantd/v1/data_generation.pb.h"
#include "quantd/v1/pruning.pb.h"
#include "tests/fuzz/request_checks.h"

namespace {

using quantd::fuzz::CheckStatusMessageFits;

// Jobs past admission: what a server with this budget would run.
constexpr int64_t kFuzzBudgetBytes = int64_t{32} << 20;

// A second per job: the fuzzer explores inputs, not long optimisations.
quantd::CancellationToken Deadline() {
  return quantd::CancellationToken(absl::Now() + absl::Seconds(1));
}

// At most 4 images and 2 steps: the job's paths, not its convergence.
template <typename Request>
void ShortGeneration(Request* r) {
  r->set_count(std::clamp<int64_t>(r->count(), 1, 4));
  r->set_iterations(std::clamp<int64_t>(r->iterations(), 1, 2));
}

const quantd::tpc::TpcRegistry& Registry() {
  static const quantd::tpc::TpcRegistry* registry = [] {
    auto* r = new quantd::tpc::TpcRegistry();
    if (!r->AddBuiltins().ok()) __builtin_trap();
    return r;
  }();
  return *registry;
}

void Prune(const uint8_t* data, size_t size) {
  quantd::v1::PruneRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  const quantd::JobLimits limits = quantd::fuzz::SmallJobLimits();
  const absl::Status valid = quantd::ValidatePruneRequest(request, limits);
  CheckStatusMessageFits(valid);
  if (!valid.ok()) return;
  if (quantd::EstimatePruneMemoryBytesBeforeImport(request) < 0) {
    __builtin_trap();
  }
  if (request.has_generated_calibration()) {
    ShortGeneration(request.mutable_generated_calibration());
  }
  const quantd::CancellationToken cancel = Deadline();
  quantd::PruneContext context;
  context.registry = &Registry();
  context.cancel = &cancel;
  context.limits = limits;
  // Admission as the server does it, once the job has imported the model.
  context.on_import = [&request](const quantd::Model& model) {
    const int64_t estimate =
        quantd::EstimatePruneMemoryBytes(request, model, 2);
    if (estimate < 0) __builtin_trap();
    return estimate > kFuzzBudgetBytes
               ? absl::ResourceExhaustedError("over the fuzzing budget")
               : absl::OkStatus();
  };
  const auto result = quantd::RunPruneJob(request, context);
  if (!result.ok()) {
    CheckStatusMessageFits(result.status());
    return;
  }
  if (std::isnan(result->output_sqnr_db())) __builtin_trap();
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
  const int64_t estimate =
      quantd::EstimateGenerateMemoryBytes(*model, *options, 2);
  if (estimate < 0) __builtin_trap();
  if (estimate > kFuzzBudgetBytes) return;
  ShortGeneration(&request);
  const quantd::CancellationToken cancel = Deadline();
  quantd::datagen::GenerateJobContext context;
  context.run.cancel = &cancel;
  context.import = import;
  context.max_count = 64;
  const auto images = quantd::datagen::RunGenerateDataJob(request, context);
  if (!images.ok()) {
    CheckStatusMessageFits(images.status());
    return;
  }
  for (const quantd::Tensor& t : images->samples) {
    for (float v : t.span<float>()) {
      if (!std::isfinite(v)) __builtin_trap();
    }
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
