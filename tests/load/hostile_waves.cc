#include "tests/load/hostile_waves.h"

#include <grpcpp/grpcpp.h>

#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "quantd/v1/quantization_service.grpc.pb.h"
#include "tests/load/load_runner.h"

namespace quantd::load {
namespace {

constexpr int64_t kChunkBytes = 1 << 20;
// Attackers send messages up to the largest --max_message_mb.
constexpr int kMaxMessageBytes = 2047 << 20;

std::unique_ptr<v1::QuantizationService::Stub> NewStub(
    const std::string& target, int id) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  // Its own connection per attacker, as separate clients would have.
  args.SetInt("quantd.hostile_attacker", id);
  return v1::QuantizationService::NewStub(grpc::CreateCustomChannel(
      target, grpc::InsecureChannelCredentials(), args));
}

class Recorder {
 public:
  void Record(const grpc::Status& status) {
    const std::string code = absl::StatusCodeToString(
        static_cast<absl::StatusCode>(status.error_code()));
    absl::MutexLock lock(&mu_);
    ++report_.codes[code];
    report_.messages.emplace(code, status.error_message().substr(0, 300));
  }
  WaveReport Take() {
    absl::MutexLock lock(&mu_);
    return report_;
  }

 private:
  absl::Mutex mu_;
  WaveReport report_;
};

}  // namespace

absl::Status ResetPeakRss(pid_t pid) {
  std::ofstream out(absl::StrCat("/proc/", pid, "/clear_refs"));
  out << "5";
  out.close();
  if (!out) {
    return absl::InternalError(
        absl::StrCat("cannot write /proc/", pid, "/clear_refs"));
  }
  return absl::OkStatus();
}

std::string WaveReport::ToString() const {
  std::string out = absl::StrFormat(
      "%s: RSS before %.1f MiB, peak %.1f MiB, after %.1f MiB;", name,
      before_kb / 1024.0, peak_kb / 1024.0, after_kb / 1024.0);
  for (const auto& [code, count] : codes) {
    if (count == 0) continue;  // looked up by a test, never seen
    const auto message = messages.find(code);
    absl::StrAppend(&out, " ", code, " x", count, " (",
                    message == messages.end() ? "" : message->second, ");");
  }
  return out;
}

absl::StatusOr<WaveReport> UnfinishedUploadsWave(const std::string& target,
                                                 pid_t server_pid, int n,
                                                 int64_t claimed_bytes,
                                                 int64_t sent_bytes) {
  if (absl::Status s = ResetPeakRss(server_pid); !s.ok()) return s;
  auto before = ProcStatusKb(server_pid, "VmRSS");
  if (!before.ok()) return before.status();
  Recorder recorder;
  absl::BlockingCounter sent(n);
  absl::Notification release;
  std::vector<std::thread> threads;
  const std::string chunk_data(kChunkBytes, 'u');
  const std::string sha(64, 'a');  // never checked: the upload never ends
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      auto stub = NewStub(target, i);
      grpc::ClientContext ctx;
      v1::UploadReceipt receipt;
      auto writer = stub->UploadModel(&ctx, &receipt);
      bool open = true;
      for (int64_t offset = 0; open && offset < sent_bytes;
           offset += kChunkBytes) {
        v1::UploadChunk chunk;
        if (offset == 0) {
          chunk.set_kind(v1::UPLOAD_KIND_MODEL);
          chunk.set_total_size(claimed_bytes);
          chunk.set_sha256(sha);
        }
        chunk.set_offset(offset);
        chunk.set_data(chunk_data.substr(
            0,
            static_cast<size_t>(std::min(kChunkBytes, sent_bytes - offset))));
        open = writer->Write(chunk);
      }
      sent.DecrementCount();
      if (open) {
        release.WaitForNotification();
        ctx.TryCancel();
      }
      recorder.Record(writer->Finish());
    });
  }
  sent.Wait();
  auto peak = ProcStatusKb(server_pid, "VmHWM");
  release.Notify();
  for (std::thread& t : threads) t.join();
  if (!peak.ok()) return peak.status();
  WaveReport report = recorder.Take();
  report.name = absl::StrCat(n, " unfinished uploads of ", claimed_bytes >> 20,
                             " MiB (", sent_bytes >> 20, " MiB sent)");
  report.before_kb = *before;
  report.peak_kb = *peak;
  auto after = ProcStatusKb(server_pid, "VmRSS");
  if (!after.ok()) return after.status();
  report.after_kb = *after;
  return report;
}

absl::StatusOr<WaveReport> QuantizeWave(const std::string& name,
                                        const std::string& target,
                                        pid_t server_pid, int n,
                                        const v1::QuantizeRequest& request) {
  if (absl::Status s = ResetPeakRss(server_pid); !s.ok()) return s;
  auto before = ProcStatusKb(server_pid, "VmRSS");
  if (!before.ok()) return before.status();
  Recorder recorder;
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      auto stub = NewStub(target, i);
      grpc::ClientContext ctx;
      auto reader = stub->Quantize(&ctx, request);
      v1::JobEvent event;
      while (reader->Read(&event)) {
      }
      recorder.Record(reader->Finish());
    });
  }
  for (std::thread& t : threads) t.join();
  auto peak = ProcStatusKb(server_pid, "VmHWM");
  if (!peak.ok()) return peak.status();
  WaveReport report = recorder.Take();
  report.name = name;
  report.before_kb = *before;
  report.peak_kb = *peak;
  auto after = ProcStatusKb(server_pid, "VmRSS");
  if (!after.ok()) return after.status();
  report.after_kb = *after;
  return report;
}

}  // namespace quantd::load
