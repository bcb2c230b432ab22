// Internals of a finished job that tests and tools need besides the
// QuantizeResult: the prepared float model the QuantizedGraph refers to
// (after graph preparation and bias correction) and the QDQ plan, from which
// quantd's own fake-quant execution is built (fake_quant.h).
#ifndef QUANTD_CORE_PIPELINE_JOB_JOB_ARTIFACTS_H_
#define QUANTD_CORE_PIPELINE_JOB_JOB_ARTIFACTS_H_

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/qdq/qdq_plan.h"

namespace quantd {

struct JobArtifacts {
  Model prepared_model;
  QdqPlan plan;
};

// RunQuantizeJob that also fills `artifacts` (may be null).
absl::StatusOr<v1::QuantizeResult> RunQuantizeJobWithArtifacts(
    const v1::QuantizeRequest& request, const JobContext& context,
    JobArtifacts* artifacts);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_JOB_JOB_ARTIFACTS_H_
