#include "server/upload_reactor.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/admission.h"
#include "server/json_log.h"
#include "server/status_util.h"

namespace quantd::server {
namespace {
constexpr char kMethod[] = "UploadModel";
}  // namespace

UploadReactor::UploadReactor(ServiceContext* service,
                             grpc::CallbackServerContext* ctx,
                             v1::UploadReceipt* receipt)
    : service_(service),
      ctx_(ctx),
      receipt_(receipt),
      started_(absl::Now()),
      assembler_(service->options.max_upload_mb << 20) {
  service_->metrics->RpcStarted(RpcType::kClientStream, kMethod);
  auto principal = service_->Authenticate(*ctx_);
  absl::Status status = principal.status();
  if (status.ok()) principal_ = *std::move(principal);
  if (status.ok() && service_->draining.load()) {
    status = DrainingError();
  }
  if (!status.ok()) {
    End(status);
    return;
  }
  StartRead(&chunk_);
}

void UploadReactor::OnReadDone(bool ok) {
  if (!ok) {  // the client half-closed: the upload is complete
    auto data = assembler_.Finish();
    End(data.ok() ? Store(*std::move(data)) : data.status());
    return;
  }
  service_->metrics->RpcMsgReceived(RpcType::kClientStream, kMethod);
  if (chunks_++ == 0) {
    absl::Status status =
        assembler_.Begin(chunk_.kind(), chunk_.total_size(), chunk_.sha256());
    if (!status.ok()) {
      End(status);
      return;
    }
    // No shortcut for content already stored: a client that only knows a
    // digest must not learn that the content is here, nor keep it alive.
    // The bytes are received and checked first; Store() then reports
    // already_present.
    auto reservation = service_->uploads->Reserve(chunk_.total_size());
    if (!reservation.ok()) {
      End(reservation.status());
      return;
    }
    reservation_ = *std::move(reservation);
  }
  absl::Status status = assembler_.Append(chunk_.offset(), chunk_.data());
  if (!status.ok()) {
    End(status);
    return;
  }
  StartRead(&chunk_);
}

absl::Status UploadReactor::Store(std::shared_ptr<const std::string> data) {
  const int64_t size = static_cast<int64_t>(data->size());
  auto already = service_->uploads->Put(assembler_.sha256(), assembler_.kind(),
                                        std::move(data),
                                        std::move(reservation_), principal_);
  if (!already.ok()) return already.status();
  receipt_->set_sha256(assembler_.sha256());
  receipt_->set_size(size);
  receipt_->set_kind(static_cast<v1::UploadKind>(assembler_.kind()));
  receipt_->set_already_present(*already);
  receipt_->set_ttl_seconds(service_->options.upload_ttl_seconds);
  Log(LogLevel::kInfo, "upload stored",
      {{"sha256", assembler_.sha256()},
       {"bytes", absl::StrCat(size)},
       {"peer", ctx_->peer()}});
  return absl::OkStatus();
}

void UploadReactor::End(const absl::Status& status) {
  if (!status.ok()) {
    Log(LogLevel::kInfo, "upload rejected",
        {{"peer", ctx_->peer()},
         {"code", absl::StatusCodeToString(status.code())},
         {"error", std::string(status.message())}});
  }
  const grpc::Status grpc_status =
      ToGrpcStatus(status, {{"rpc", kMethod}, {"peer", ctx_->peer()}});
  final_code_ = static_cast<int>(grpc_status.error_code());
  reservation_.reset();  // a failed upload's bytes are free for others
  Finish(grpc_status);
}

void UploadReactor::OnDone() {
  service_->metrics->RpcHandled(RpcType::kClientStream, kMethod, final_code_,
                                absl::ToDoubleSeconds(absl::Now() - started_));
  delete this;
}

}  // namespace quantd::server
