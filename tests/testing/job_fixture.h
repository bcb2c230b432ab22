// A gtest fixture for the tests that run whole quantize jobs in process
// (RunQuantizeJob) against the built-in TPCs, with an optional thread pool,
// progress sink and cancellation token. Header only: its users already link
// the pipeline and the TPC registry.
#ifndef QUANTD_TESTS_TESTING_JOB_FIXTURE_H_
#define QUANTD_TESTS_TESTING_JOB_FIXTURE_H_

#include <functional>

#include "absl/status/statusor.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"
#include "core/tpc/registry.h"
#include "gtest/gtest.h"
#include "quantd/v1/quantization_service.pb.h"

namespace quantd::testing {

// What a job runs with besides its request; all optional.
struct JobRun {
  ThreadPool* pool = nullptr;
  ProgressSink* sink = nullptr;
  const CancellationToken* cancel = nullptr;
  std::function<absl::Status(JobMemoryStage)> on_memory_stage;
};

class BuiltinTpcJobTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(registry_.AddBuiltins().ok()); }

  absl::StatusOr<v1::QuantizeResult> Run(const v1::QuantizeRequest& r,
                                         const JobRun& run = {}) {
    JobContext ctx;
    ctx.registry = &registry_;
    ctx.pool = run.pool;
    ctx.progress = run.sink;
    ctx.cancel = run.cancel;
    ctx.on_memory_stage = run.on_memory_stage;
    return RunQuantizeJob(r, ctx);
  }

  tpc::TpcRegistry registry_;
};

}  // namespace quantd::testing

#endif  // QUANTD_TESTS_TESTING_JOB_FIXTURE_H_
