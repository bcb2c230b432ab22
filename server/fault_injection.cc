#include "server/fault_injection.h"

#include <stdexcept>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"

namespace quantd::server {
namespace {

bool ValidStageName(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || c == '_')) return false;
  }
  return true;
}

// stall:STAGE@N: forwards every report, and at the N-th report of STAGE
// with a fraction above 0 (the stage's start is not counted) warns and
// blocks until the job is cancelled. Reports may come from several threads.
class StallAtTickSink final : public ProgressSink {
 public:
  StallAtTickSink(ProgressSink* inner, const CancellationToken* token,
                  std::map<std::string, int> ticks)
      : inner_(inner), token_(token), ticks_(std::move(ticks)) {}

  void Report(const Progress& progress) override {
    inner_->Report(progress);
    if (progress.fraction <= 0) return;
    int tick = 0;
    {
      absl::MutexLock lock(&mu_);
      const auto it = ticks_.find(progress.stage);
      if (it == ticks_.end()) return;
      tick = ++seen_[progress.stage];
      if (tick != it->second) return;
    }
    inner_->Warn(absl::StrCat("fault injected: stalled at progress report ",
                              tick, " of stage '", progress.stage,
                              "' until cancelled"));
    (void)token_->WaitUntilCancelled();
  }
  void Warn(absl::string_view message) override { inner_->Warn(message); }

 private:
  ProgressSink* const inner_;
  const CancellationToken* const token_;
  const std::map<std::string, int> ticks_;
  absl::Mutex mu_;
  std::map<std::string, int> seen_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<FaultInjection> FaultInjection::Parse(const std::string& spec) {
  FaultInjection out;
  for (absl::string_view item : absl::StrSplit(spec, ',', absl::SkipEmpty())) {
    const std::vector<std::string> parts = absl::StrSplit(item, ':');
    const auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(
          absl::StrCat("--fault_injection: '", item, "': ", why,
                       " (expected stall:STAGE, stall:STAGE@N, fail:STAGE or "
                       "throw:STAGE)"));
    };
    if (parts.size() != 2) return bad("not KIND:STAGE");
    Kind kind;
    if (parts[0] == "stall") {
      kind = Kind::kStall;
    } else if (parts[0] == "fail") {
      kind = Kind::kFail;
    } else if (parts[0] == "throw") {
      kind = Kind::kThrow;
    } else {
      return bad(absl::StrCat("unknown kind '", parts[0], "'"));
    }
    const std::vector<std::string> at = absl::StrSplit(parts[1], '@');
    if (at.size() > 2 || !ValidStageName(at[0])) {
      return bad("the stage must be a lower-case stage name");
    }
    if (at.size() == 2) {
      int tick = 0;
      if (kind != Kind::kStall || !absl::SimpleAtoi(at[1], &tick) || tick < 1) {
        return bad("@N is for stall only, with N >= 1");
      }
      out.stall_ticks_[at[0]] = tick;
      continue;
    }
    out.faults_[at[0]] = kind;
  }
  return out;
}

std::string FaultInjection::ToString() const {
  std::vector<std::string> items;
  for (const auto& [stage, kind] : faults_) {
    const char* name = kind == Kind::kStall  ? "stall"
                       : kind == Kind::kFail ? "fail"
                                             : "throw";
    items.push_back(absl::StrCat(name, ":", stage));
  }
  for (const auto& [stage, tick] : stall_ticks_) {
    items.push_back(absl::StrCat("stall:", stage, "@", tick));
  }
  return absl::StrJoin(items, ",");
}

std::function<absl::Status(const std::string&)> FaultInjection::HookFor(
    const CancellationToken* token) const {
  if (faults_.empty()) return nullptr;
  return [faults = faults_, token](const std::string& stage) -> absl::Status {
    const auto it = faults.find(stage);
    if (it == faults.end()) return absl::OkStatus();
    switch (it->second) {
      case Kind::kStall:
        if (token == nullptr) {
          return absl::InternalError("stall fault injected without a token");
        }
        return token->WaitUntilCancelled();
      case Kind::kFail:
        return absl::InternalError(
            absl::StrCat("fault injected at stage '", stage, "'"));
      case Kind::kThrow:
        throw std::runtime_error(
            absl::StrCat("fault injected at stage '", stage, "'"));
    }
    return absl::OkStatus();
  };
}

std::unique_ptr<ProgressSink> FaultInjection::WrapProgress(
    ProgressSink* inner, const CancellationToken* token) const {
  if (stall_ticks_.empty() || token == nullptr) return nullptr;
  return std::make_unique<StallAtTickSink>(inner, token, stall_ticks_);
}

}  // namespace quantd::server
