// TLS, mutual TLS and bearer tokens against the real quantd binary. The
// certificates are throwaway ones made with the openssl CLI in a temp dir.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "clients/cpp/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/server_process.h"

namespace quantd::testing {
namespace {

using ::testing::HasSubstr;

// A CA, a server certificate for localhost/127.0.0.1 and a client
// certificate, all signed by the CA; plus a second CA nobody trusts.
class Certificates {
 public:
  static absl::StatusOr<Certificates> Make() {
    Certificates c;
    c.dir_ = std::filesystem::temp_directory_path() /
             absl::StrCat("quantd_tls_", getpid(), "_", rand());
    std::filesystem::create_directories(c.dir_);
    const std::string d = c.dir_.string();
    const std::string script = absl::StrCat(
        "set -e; cd ", d, ";",
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-ca "
        "-keyout ca.key -out ca.pem;",
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=rogue-ca "
        "-keyout rogue.key -out rogue.pem;",
        "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1' > san.ext;",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=localhost "
        "-keyout server.key -out server.csr;",
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key "
        "-CAcreateserial -days 1 -extfile san.ext -out server.pem;",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=client "
        "-keyout client.key -out client.csr;",
        "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key "
        "-CAcreateserial -days 1 -out client.pem;",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=rogue-client "
        "-keyout rogue_client.key -out rogue_client.csr;",
        "openssl x509 -req -in rogue_client.csr -CA rogue.pem -CAkey rogue.key "
        "-CAcreateserial -days 1 -out rogue_client.pem;");
    const std::string command =
        absl::StrCat("sh -c '", script, "' >", d, "/openssl.log 2>&1");
    if (std::system(command.c_str()) != 0) {
      return absl::InternalError("openssl failed; see " + d + "/openssl.log");
    }
    return c;
  }
  std::string Path(const std::string& name) const {
    return (dir_ / name).string();
  }
  void Remove() { std::filesystem::remove_all(dir_); }

 private:
  std::filesystem::path dir_;
};

// ServerReflectionInfo with one list_services request, called as a unary
// method (one message each way) through a generic stub: the status says
// whether reflection is served.
grpc::Status ListServicesByReflection(const std::string& target) {
  grpc::GenericStub stub(
      grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  // ServerReflectionRequest{list_services: "*"}: field 7, length 1.
  const std::string request_bytes = "\x3a\x01*";
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status status;
  absl::Notification done;
  stub.UnaryCall(&ctx,
                 "/grpc.reflection.v1alpha.ServerReflection/"
                 "ServerReflectionInfo",
                 grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
                   status = std::move(s);
                   done.Notify();
                 });
  done.WaitForNotification();
  return status;
}

class SecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto certs = Certificates::Make();
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_ = new Certificates(*std::move(certs));
    std::ofstream(certs_->Path("token")) << "s3cret-token\n";
    std::ofstream(certs_->Path("two_tokens")) << "token-of-a\n\ntoken-of-b\n";
  }
  static void TearDownTestSuite() {
    certs_->Remove();
    delete certs_;
  }
  static absl::StatusOr<std::string> Ping(client::ChannelOptions options) {
    auto client = client::Client::Create(options);
    if (!client.ok()) return client.status();
    (*client)->unary_timeout = absl::Seconds(10);
    auto info = (*client)->GetServerInfo();
    if (!info.ok()) return info.status();
    return info->version();
  }
  static Certificates* certs_;
};
Certificates* SecurityTest::certs_ = nullptr;

TEST_F(SecurityTest, TokenAuthAcceptsRightTokenAndRejectsOthers) {
  auto server =
      ServerProcess::Start({"--auth_token_file=" + certs_->Path("token")});
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string target = (*server)->target();
  EXPECT_TRUE(Ping({.target = target, .auth_token = "s3cret-token"}).ok());
  const absl::Status wrong =
      Ping({.target = target, .auth_token = "s3cret-tokem"}).status();
  EXPECT_EQ(wrong.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(wrong.message()), HasSubstr("invalid bearer token"));
  const absl::Status missing = Ping({.target = target}).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(missing.message()), HasSubstr("missing"));
}

TEST_F(SecurityTest, EachTokenHasItsOwnUploads) {
  // Uploads are per token: B must not use (nor learn of, nor keep alive)
  // what A uploaded, even by its digest.
  auto server =
      ServerProcess::Start({"--auth_token_file=" + certs_->Path("two_tokens")});
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string target = (*server)->target();
  auto a =
      client::Client::Create({.target = target, .auth_token = "token-of-a"});
  auto b =
      client::Client::Create({.target = target, .auth_token = "token-of-b"});
  ASSERT_TRUE(a.ok() && b.ok());
  auto receipt = (*a)->Upload(v1::UPLOAD_KIND_MODEL, "a's model bytes",
                              absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(receipt.ok()) << receipt.status();
  v1::QuantizeRequest request;
  request.set_model_ref(receipt->sha256());
  request.mutable_tpc()->set_name("imx500@4.0");
  // A's reference resolves (the job then fails validation: no samples).
  const absl::Status for_a = (*a)->Quantize(request).status();
  EXPECT_EQ(for_a.code(), absl::StatusCode::kInvalidArgument) << for_a;
  const absl::Status for_b = (*b)->Quantize(request).status();
  EXPECT_EQ(for_b.code(), absl::StatusCode::kNotFound) << for_b;
  EXPECT_THAT(std::string(for_b.message()),
              HasSubstr("model_ref: no upload with sha256"));
  // Uploading the same bytes, B is not told A has them.
  auto again = (*b)->Upload(v1::UPLOAD_KIND_MODEL, "a's model bytes",
                            absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->already_present());
}

TEST_F(SecurityTest, TokenAuthAppliesToStreamsToo) {
  auto server =
      ServerProcess::Start({"--auth_token_file=" + certs_->Path("token")});
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = client::Client::Create({.target = (*server)->target()});
  ASSERT_TRUE(client.ok());
  v1::QuantizeRequest request;
  request.set_onnx_model("m");
  EXPECT_EQ((*client)->Quantize(request).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(
      (*client)
          ->Upload(v1::UPLOAD_KIND_MODEL, "m", absl::Now() + absl::Seconds(10))
          .status()
          .code(),
      absl::StatusCode::kUnauthenticated);
}

// Found by an outside attacker: a request id with a byte outside printable
// ASCII was copied into the x-request-id header and gRPC aborted the
// process, before and after the UNAUTHENTICATED rejection.
TEST_F(SecurityTest, AnyRequestIdIsSafeWithoutAToken) {
  auto server =
      ServerProcess::Start({"--auth_token_file=" + certs_->Path("token")});
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = client::Client::Create({.target = (*server)->target()});
  ASSERT_TRUE(client.ok());
  for (const std::string id :
       {"mod\xC3\xA8le-1", "line\nbreak", "tab\there", "del\x7F", "%41"}) {
    v1::QuantizeRequest request;
    request.set_request_id(id);
    request.set_onnx_model("m");
    EXPECT_EQ((*client)->Quantize(request).status().code(),
              absl::StatusCode::kUnauthenticated)
        << id;
  }
  // Still serving: the process survived every one of them.
  EXPECT_EQ((*client)->Health("").value(), "SERVING");
}

TEST_F(SecurityTest, HealthNeedsNoTokenSoProbesWork) {
  auto server =
      ServerProcess::Start({"--auth_token_file=" + certs_->Path("token")});
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = client::Client::Create({.target = (*server)->target()});
  ASSERT_TRUE(client.ok());
  EXPECT_EQ((*client)->Health("").value(), "SERVING");
}

TEST_F(SecurityTest, TlsServesClientsThatTrustTheCa) {
  auto server =
      ServerProcess::Start({"--tls_cert=" + certs_->Path("server.pem"),
                            "--tls_key=" + certs_->Path("server.key")});
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string target = absl::StrCat("localhost:", (*server)->port());
  EXPECT_TRUE(Ping({.target = target, .tls_ca = certs_->Path("ca.pem")}).ok());
  // A client that trusts another CA cannot complete the handshake.
  EXPECT_EQ(Ping({.target = target, .tls_ca = certs_->Path("rogue.pem")})
                .status()
                .code(),
            absl::StatusCode::kUnavailable);
  // Nor can a plaintext client.
  EXPECT_EQ(Ping({.target = target}).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(SecurityTest, MutualTlsRequiresAClientCertificateFromTheCa) {
  auto server =
      ServerProcess::Start({"--tls_cert=" + certs_->Path("server.pem"),
                            "--tls_key=" + certs_->Path("server.key"),
                            "--tls_client_ca=" + certs_->Path("ca.pem")});
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string target = absl::StrCat("localhost:", (*server)->port());
  EXPECT_TRUE(Ping({.target = target,
                    .tls_ca = certs_->Path("ca.pem"),
                    .tls_cert = certs_->Path("client.pem"),
                    .tls_key = certs_->Path("client.key")})
                  .ok());
  EXPECT_EQ(Ping({.target = target, .tls_ca = certs_->Path("ca.pem")})
                .status()
                .code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(Ping({.target = target,
                  .tls_ca = certs_->Path("ca.pem"),
                  .tls_cert = certs_->Path("rogue_client.pem"),
                  .tls_key = certs_->Path("rogue_client.key")})
                .status()
                .code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(SecurityTest, MutualTlsRefusesTheServersOwnCertificateAsAClient) {
  // The client CA signed the server's certificate too: anyone holding the
  // server's key must still not pass as a client.
  auto server =
      ServerProcess::Start({"--tls_cert=" + certs_->Path("server.pem"),
                            "--tls_key=" + certs_->Path("server.key"),
                            "--tls_client_ca=" + certs_->Path("ca.pem")});
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string target = absl::StrCat("localhost:", (*server)->port());
  const absl::Status status = Ping({.target = target,
                                    .tls_ca = certs_->Path("ca.pem"),
                                    .tls_cert = certs_->Path("server.pem"),
                                    .tls_key = certs_->Path("server.key")})
                                  .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("the client certificate is this server's own"));
}

TEST_F(SecurityTest, ReflectionIsServedOnlyWithItsFlag) {
  // Reflection is off unless --enable_reflection asks for it, token or not.
  auto closed =
      ServerProcess::Start({"--auth_token_file=" + certs_->Path("token")});
  ASSERT_TRUE(closed.ok()) << closed.status();
  EXPECT_EQ(ListServicesByReflection((*closed)->target()).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  auto open = ServerProcess::Start({"--enable_reflection"});
  ASSERT_TRUE(open.ok()) << open.status();
  const grpc::Status status = ListServicesByReflection((*open)->target());
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(SecurityTest, TlsWithTokenNeedsBoth) {
  auto server =
      ServerProcess::Start({"--tls_cert=" + certs_->Path("server.pem"),
                            "--tls_key=" + certs_->Path("server.key"),
                            "--auth_token_file=" + certs_->Path("token")});
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string target = absl::StrCat("localhost:", (*server)->port());
  EXPECT_TRUE(Ping({.target = target,
                    .tls_ca = certs_->Path("ca.pem"),
                    .auth_token = "s3cret-token"})
                  .ok());
  EXPECT_EQ(Ping({.target = target, .tls_ca = certs_->Path("ca.pem")})
                .status()
                .code(),
            absl::StatusCode::kUnauthenticated);
}

TEST_F(SecurityTest, InsecureStartupSaysSoInTheLog) {
  auto server = ServerProcess::Start({});
  ASSERT_TRUE(server.ok()) << server.status();
  auto line = (*server)->WaitForLog("listening");
  ASSERT_TRUE(line.ok());
  EXPECT_EQ((*line)["tls"], "off");
  EXPECT_EQ((*line)["auth"], "off");
  EXPECT_EQ((*line)["address"], "127.0.0.1");
  auto warning = (*server)->WaitForLog(
      "plaintext (no TLS) and unauthenticated (no token): serving only on "
      "127.0.0.1; anyone who can reach it can submit jobs");
  ASSERT_TRUE(warning.ok()) << warning.status();
  EXPECT_EQ((*warning)["level"], "warning");
}

}  // namespace
}  // namespace quantd::testing
