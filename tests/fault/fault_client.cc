// A quantd client in its own process, so that tests can kill it (a real
// disconnect: the socket closes, no RST_STREAM is sent) at a chosen point:
//   fault_client TARGET
// Runs testing::SmallJob and prints, one line each and flushed at once,
// "accepted", "stage <name>" for the first progress event of each stage,
// and finally "status <CODE>".
#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "clients/cpp/client.h"
#include "tests/integration/test_jobs.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fault_client TARGET\n");
    return 2;
  }
  auto client = quantd::client::Client::Create({.target = argv[1]});
  if (!client.ok()) {
    std::printf("status %s\n",
                absl::StatusCodeToString(client.status().code()).c_str());
    return 1;
  }
  std::string last_stage;
  auto result =
      (*client)->Quantize(quantd::testing::SmallJob("fault-client"),
                          [&](const quantd::v1::JobEvent& event) {
                            if (event.has_accepted()) {
                              std::printf("accepted\n");
                            } else if (event.has_progress() &&
                                       event.progress().stage() != last_stage) {
                              last_stage = event.progress().stage();
                              std::printf("stage %s\n", last_stage.c_str());
                            }
                            std::fflush(stdout);
                          });
  std::printf("status %s\n",
              absl::StatusCodeToString(result.status().code()).c_str());
  return result.ok() ? 0 : 1;
}
