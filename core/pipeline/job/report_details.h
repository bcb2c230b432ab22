// The report's details beyond the per-node summary: each layer's
// activation grid, kernel threshold span and coarse calibration histogram,
// and what ran on what (model digest, quantd version, the options).
#ifndef QUANTD_CORE_PIPELINE_JOB_REPORT_DETAILS_H_
#define QUANTD_CORE_PIPELINE_JOB_REPORT_DETAILS_H_

#include <string>

#include "core/pipeline/job/job_state.h"
#include "core/report/report.h"
#include "quantd/v1/job.pb.h"
#include "quantd/v1/quantized_graph.pb.h"

namespace quantd {

// Bins of the report's activation histograms.
inline constexpr int kReportHistogramBins = 32;

// `histogram` (equal-width bins) merged into `bins` equal-width bins over
// the same range: each source bin goes whole to the bin holding its centre.
ActivationHistogram CoarseHistogram(const quantizers::Histogram& histogram,
                                    int bins);

// The request's settings that change the quantized model (quantization,
// mixed precision, GPTQ, export), one protobuf text line each; "" when all
// are defaults. Not the model, samples, TPC, thread count or which samples
// the report evaluates on (the report states those apart).
std::string OptionsText(const v1::QuantizeRequest& request);

// Fills the layers' details from the QuantizedGraph (matched by node name)
// and the statistics, and the report's header fields (`options_text`:
// JobSpec::options_text).
void AddReportDetails(const JobState& state, const v1::QuantizedGraph& qg,
                      const std::string& options_text,
                      const std::string& model_sha256, ReportData* report);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_JOB_REPORT_DETAILS_H_
