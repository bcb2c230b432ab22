// Writes the Python client test's oracle: DIR/request.pb (SmallJob) and
// DIR/result.pb, the QuantizeResult of the in-process pipeline for it.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/pipeline/job/quantize_job.h"
#include "server/tpc_catalog.h"
#include "tests/integration/test_jobs.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  const quantd::v1::QuantizeRequest request =
      quantd::testing::SmallJob("python");
  auto catalog = quantd::server::TpcCatalog::Create("");
  if (!catalog.ok()) return 1;
  quantd::ThreadPool pool(2);
  quantd::CancellationToken token;
  quantd::NullProgressSink progress;
  quantd::JobContext context;
  context.registry = (*catalog)->registry();
  context.pool = &pool;
  context.cancel = &token;
  context.progress = &progress;
  auto result = quantd::RunQuantizeJob(request, context);
  if (!result.ok()) {
    std::fprintf(stderr, "%s\n", result.status().ToString().c_str());
    return 1;
  }
  std::ofstream(dir / "request.pb", std::ios::binary)
      << request.SerializeAsString();
  std::ofstream(dir / "result.pb", std::ios::binary)
      << result->SerializeAsString();
  return 0;
}
