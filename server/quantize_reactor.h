// The reactor behind one Quantize stream.
//
// Construction (on a gRPC thread) only does cheap checks and admission, then
// hands the job to the server's worker pool. Events reach the client through
// an EventCoalescer (one write in flight, latest progress wins), heartbeats
// come from the HeartbeatTicker, and OnCancel (client gone, deadline,
// shutdown) or a failed write (the stream is broken) fires the job's
// CancellationToken. The job's state is shared, so
// the reactor may be deleted in OnDone while the worker is still unwinding.
#ifndef QUANTD_SERVER_QUANTIZE_REACTOR_H_
#define QUANTD_SERVER_QUANTIZE_REACTOR_H_

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_callback.h>

#include <memory>

#include "quantd/v1/job.pb.h"
#include "server/event_coalescer.h"
#include "server/service_context.h"

namespace quantd::server {

class JobState;

class QuantizeReactor final : public grpc::ServerWriteReactor<v1::JobEvent>,
                              public EventCoalescer<v1::JobEvent>::Sink {
 public:
  QuantizeReactor(ServiceContext* service, grpc::CallbackServerContext* ctx,
                  const v1::QuantizeRequest* request);

  // grpc::ServerWriteReactor
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  // EventCoalescer::Sink
  void StartWrite(const v1::JobEvent* event) override;
  void Finish(const absl::Status& status) override;
  void WriteAndFinish(const v1::JobEvent* event,
                      const absl::Status& status) override;

 private:
  void Start(const v1::QuantizeRequest* request);
  // Why the call ended early: the deadline or a cancel / disconnect.
  absl::Status CancelReason() const;

  ServiceContext* const service_;
  grpc::CallbackServerContext* const ctx_;
  const absl::Time started_;
  std::shared_ptr<JobState> job_;
  int final_code_ = 0;
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_QUANTIZE_REACTOR_H_
