// The memory model: one estimate of the peak memory per job kind, from which
// the server admits a job against its budget (server/admission.h) and the
// benchmarks compare against measured peaks (bench/service/memory_bench).
// Every term counts what the job really holds at its peak: the request, the
// model's copies, the activations of the samples in flight, and what each
// stage keeps on top (histograms, the sensitivity cache, tapes and
// gradients of backward passes, optimiser state). Fitted constants are
// documented where they are fitted (job_memory.cc). Estimates saturate
// rather than overflow: a request is untrusted.
//
//   job kind                     entry
//   Quantize (PTQ, MP, target,   EstimateJobMemoryBytesBeforeImport (before
//   GPTQ, analysis, generated    the model is parsed), EstimateJobMemoryBytes
//   calibration)                 (after the preflight)
//   GenerateData                 EstimateGenerateMemoryBytes
//   Prune (+ its quantize and    EstimatePruneMemoryBytesBeforeImport,
//   generated calibration)       EstimatePruneMemoryBytes
//
// Every Quantize estimate after the import (the preflight's JobInput, a
// request alone, a Prune's quantize job) gathers the same terms and sums
// them in one function (job_memory.cc, QuantizeEstimate).
#ifndef QUANTD_CORE_PIPELINE_MEMORY_JOB_MEMORY_H_
#define QUANTD_CORE_PIPELINE_MEMORY_JOB_MEMORY_H_

#include <array>
#include <cstdint>

#include "core/datagen/options.h"
#include "core/graph/graph.h"
#include "core/pipeline/job/preflight.h"
#include "core/pipeline/memory/job_memory_stage.h"
#include "quantd/v1/job.pb.h"
#include "quantd/v1/pruning.pb.h"

namespace quantd {

// Quantize, the part known without parsing the model: the request's bytes,
// the model's copies and a fixed overhead. Admission reserves it before the
// import so that parsing is paid from the budget.
// `spec`: the request's (ValidateQuantizeRequest).
int64_t EstimateJobMemoryBytesBeforeImport(const v1::QuantizeRequest& request,
                                           const JobSpec& spec);

// Quantize, the job's peak: the sample bytes, the model's copies and the
// activations of `samples_in_flight` samples at once (from the sum of every
// activation of one sample, shapes inferred for the first calibration
// sample), the stages' own (mixed precision, Hessian scores, GPTQ, the
// report's kept values), or the generate stage's when it calibrates on
// generated images. As the server runs the job: without the request's
// payload, which it frees after the import (input.request_payload_bytes).
int64_t EstimateJobMemoryBytes(const JobInput& input, int samples_in_flight);

// The job's reservation as it reaches the stages admission reserves for
// only then (job_memory_stage.h): the estimate with every stage reached so
// far, from bytes() = kAdmitted's alone (a quality target without its
// ranking, equalization and GPTQ trials) to whole() =
// EstimateJobMemoryBytes. A job without a quality target has one figure.
class JobMemoryReservation {
 public:
  JobMemoryReservation() = default;
  JobMemoryReservation(const JobInput& input, int samples_in_flight);
  // Marks `stage` reached; returns bytes().
  int64_t Reach(JobMemoryStage stage);
  int64_t bytes() const { return by_reached_[reached_]; }
  int64_t whole() const { return by_reached_.back(); }

 private:
  // By the set of the target's stages reached (kAdmitted, always reached,
  // has no bit: bit stage - 1).
  std::array<int64_t, 1u << (kJobMemoryStages - 1)> by_reached_{};
  unsigned reached_ = 0;
};

// The same from a request alone (tools and tests): imports the model; 0
// activations when it does not parse.
int64_t EstimateJobMemoryBytes(const v1::QuantizeRequest& request,
                               const JobLimits& limits = {},
                               int samples_in_flight = 1);

// GenerateData (and the generate stage of Quantize and Prune) on `model`
// (as imported): the images with Adam's state and the padded copies, and
// the backward passes' tapes: every activation of each image of a batch
// (shapes inferred for the generated image), and the gradients of the
// images `threads` threads run backward at once.
int64_t EstimateGenerateMemoryBytes(const Model& model,
                                    const datagen::DataGenOptions& options,
                                    int threads);

// Prune, the part known without parsing the model: the request and its
// parsed copies, the model once more, a fixed overhead. Admission reserves
// it on the gRPC thread; the job's worker parses the model.
int64_t EstimatePruneMemoryBytesBeforeImport(const v1::PruneRequest& request);

// Prune, the job's peak on `model` (the request's, as imported): the request,
// the model's copies (parsed, pruned, exported, the gradient graph's),
// LFH's Hessian passes (a tape and its gradients per running sample), the
// evaluation's two executors, data generation when the request asks for
// generated calibration, and the quantize stage of the pruned model when it
// asks for one.
int64_t EstimatePruneMemoryBytes(const v1::PruneRequest& request,
                                 const Model& model, int threads);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_MEMORY_JOB_MEMORY_H_
