#include "server/status_util.h"

#include "gtest/gtest.h"

namespace quantd::server {
namespace {

TEST(ToGrpcStatusTest, OkMapsToOk) { EXPECT_TRUE(ToGrpcStatus({}).ok()); }

// google.rpc.Code numbers, as in grpc/status.h: the mapping must keep each
// code, so a client sees exactly what core/ returned.
TEST(ToGrpcStatusTest, EveryCodeKeepsItsNumberAndMessage) {
  const struct {
    absl::Status status;
    grpc::StatusCode expected;
  } cases[] = {
      {absl::CancelledError("c"), grpc::StatusCode::CANCELLED},
      {absl::UnknownError("c"), grpc::StatusCode::UNKNOWN},
      {absl::InvalidArgumentError("c"), grpc::StatusCode::INVALID_ARGUMENT},
      {absl::DeadlineExceededError("c"), grpc::StatusCode::DEADLINE_EXCEEDED},
      {absl::NotFoundError("c"), grpc::StatusCode::NOT_FOUND},
      {absl::AlreadyExistsError("c"), grpc::StatusCode::ALREADY_EXISTS},
      {absl::PermissionDeniedError("c"), grpc::StatusCode::PERMISSION_DENIED},
      {absl::ResourceExhaustedError("c"), grpc::StatusCode::RESOURCE_EXHAUSTED},
      {absl::FailedPreconditionError("c"),
       grpc::StatusCode::FAILED_PRECONDITION},
      {absl::AbortedError("c"), grpc::StatusCode::ABORTED},
      {absl::OutOfRangeError("c"), grpc::StatusCode::OUT_OF_RANGE},
      {absl::UnimplementedError("c"), grpc::StatusCode::UNIMPLEMENTED},
      {absl::InternalError("c"), grpc::StatusCode::INTERNAL},
      {absl::UnavailableError("c"), grpc::StatusCode::UNAVAILABLE},
      {absl::DataLossError("c"), grpc::StatusCode::DATA_LOSS},
      {absl::UnauthenticatedError("c"), grpc::StatusCode::UNAUTHENTICATED},
  };
  for (const auto& c : cases) {
    const grpc::Status mapped = ToGrpcStatus(c.status);
    EXPECT_EQ(mapped.error_code(), c.expected) << c.status;
    EXPECT_EQ(mapped.error_message(), "c");
  }
}

TEST(ToGrpcStatusTest, OutOfRangeCodeBecomesUnknown) {
  const absl::Status odd(static_cast<absl::StatusCode>(42), "odd");
  const grpc::Status mapped = ToGrpcStatus(odd);
  EXPECT_EQ(mapped.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(mapped.error_message(), "odd");
}

}  // namespace
}  // namespace quantd::server
