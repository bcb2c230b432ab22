// What the Quantize RPC adds to the one job reactor (job_stream_reactor.h):
// the request's shape and upload references, the TPC resolved once (in the
// accepted event and the job), the estimate before the import, the job on
// the request's bytes or its uploads, and the QuantizeResult as events.
#ifndef QUANTD_SERVER_QUANTIZE_RPC_H_
#define QUANTD_SERVER_QUANTIZE_RPC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/pipeline/job/preflight.h"
#include "core/runtime/stage_names.h"
#include "quantd/v1/job.pb.h"
#include "quantd/v1/quantization_service.pb.h"
#include "server/job_stream_reactor.h"
#include "server/json_log.h"
#include "server/service_context.h"

namespace quantd::server {

class QuantizeRpc : public JobRpcDefaults<v1::JobEvent> {
 public:
  using Request = v1::QuantizeRequest;
  using Event = v1::JobEvent;
  static constexpr char kMethod[] = "Quantize";
  // Announced as it begins: its report would go out with the result anyway.
  static constexpr const char* kLastStage = stage::kReport;

  // Mutable: the job's import frees the request's payload (on_preflight);
  // OwnedRequestStreamingHandler hands it over.
  explicit QuantizeRpc(Request* request) : request_(request) {}

  absl::StatusOr<int64_t> Check(ServiceContext& service,
                                const std::string& principal);
  // `accepted` carries the queue position and the resolved TPC.
  bool Accepted(int queue_position, v1::JobEvent* event, LogFields* fields);
  static void Stamp(const std::string& job_id, const std::string& request_id,
                    v1::JobEvent* event) {
    event->set_job_id(job_id);
    event->set_request_id(request_id);
  }
  absl::StatusOr<std::vector<v1::JobEvent>> Run(const JobCall& call);

 private:
  Request* const request_;
  // By Check; the job runs with them (JobContext.sources).
  ResolvedTpc tpc_;
  JobSpec spec_;
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_QUANTIZE_RPC_H_
