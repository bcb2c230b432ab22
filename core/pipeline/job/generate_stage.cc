#include "core/pipeline/job/generate_stage.h"

#include <memory>
#include <utility>

#include "core/datagen/data_generation.h"
#include "core/datagen/generated_calibration.h"
#include "core/util/status_macros.h"

namespace quantd {

absl::Status GenerateCalibration(ThreadPool* pool,
                                 const CancellationToken* cancel,
                                 ProgressSink* progress, JobInput* input) {
  const JobSpec& spec = input->spec;
  const datagen::DataGenOptions& options = *spec.generate;
  // The model's tensors are shared, not copied.
  ASSIGN_OR_RETURN(
      datagen::GeneratedData data,
      datagen::GenerateData(std::make_shared<const Model>(input->model),
                            options, {pool, cancel, progress}));
  for (std::string& w : data.warnings) {
    input->warnings.push_back("generated calibration: " + std::move(w));
  }
  input->calibration.clear();
  input->calibration.reserve(data.samples.size());
  for (Tensor& t : data.samples) {
    input->calibration.push_back({{data.input_name, std::move(t)}});
  }
  const int max_calibration = spec.ptq.max_calibration_samples;
  if (max_calibration > 0 &&
      static_cast<int>(input->calibration.size()) > max_calibration) {
    input->calibration.resize(max_calibration);
  }
  if (!input->evaluation_samples_sent) {
    input->evaluation = input->calibration;
    const int n = spec.report_samples;
    if (n >= 0 && static_cast<int>(input->evaluation.size()) > n) {
      input->evaluation.resize(n);
    }
  }
  return absl::OkStatus();
}

}  // namespace quantd
