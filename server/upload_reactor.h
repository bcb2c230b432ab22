// The reactor behind one UploadModel stream: reassembles chunks (size cap
// before allocation, in-order offsets, sha256 check) into the upload store.
// The claimed total_size is reserved in the upload store before any byte is
// kept, so uploads in flight count against --upload_store_mb. Content that
// is already stored is still received and checked in full (proof that the
// client has it) before the receipt says already_present. Uploads are kept
// in the space of the client's identity (ServiceContext::Authenticate).
#ifndef QUANTD_SERVER_UPLOAD_REACTOR_H_
#define QUANTD_SERVER_UPLOAD_REACTOR_H_

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_callback.h>

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "quantd/v1/quantization_service.pb.h"
#include "server/service_context.h"
#include "server/upload_assembler.h"

namespace quantd::server {

class UploadReactor final : public grpc::ServerReadReactor<v1::UploadChunk> {
 public:
  UploadReactor(ServiceContext* service, grpc::CallbackServerContext* ctx,
                v1::UploadReceipt* receipt);

  void OnReadDone(bool ok) override;
  void OnDone() override;

 private:
  void End(const absl::Status& status);
  absl::Status Store(std::shared_ptr<const std::string> data);

  ServiceContext* const service_;
  grpc::CallbackServerContext* const ctx_;
  v1::UploadReceipt* const receipt_;
  const absl::Time started_;
  UploadAssembler assembler_;
  std::unique_ptr<UploadStore::Reservation> reservation_;
  std::string principal_;  // the upload's space in the store
  v1::UploadChunk chunk_;
  int64_t chunks_ = 0;
  int final_code_ = 0;
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_UPLOAD_REACTOR_H_
