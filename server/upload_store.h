// Content-addressed store of uploaded models and sample sets.
//
// Keyed by sha256 (so uploads are idempotent). Bounded: the total bytes never
// exceed `max_bytes` (least recently used entries go first) and an entry
// unused for `ttl` expires. Entries are immutable and shared, so a job keeps
// its bytes alive even if the store evicts them meanwhile.
#ifndef QUANTD_SERVER_UPLOAD_STORE_H_
#define QUANTD_SERVER_UPLOAD_STORE_H_

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace quantd::server {

struct UploadStoreOptions {
  int64_t max_bytes = int64_t{1} << 30;
  absl::Duration ttl = absl::Hours(1);
  std::function<absl::Time()> clock = [] { return absl::Now(); };
};

class UploadStore {
 public:
  struct Entry {
    int kind = 0;  // v1::UploadKind
    std::shared_ptr<const std::string> data;
  };

  explicit UploadStore(UploadStoreOptions options);

  // Stores `data` under `sha256` (which the caller has verified). Returns
  // true if the content was already present (its use time is refreshed).
  // RESOURCE_EXHAUSTED if it alone exceeds the byte budget.
  absl::StatusOr<bool> Put(const std::string& sha256, int kind,
                           std::shared_ptr<const std::string> data);
  // NOT_FOUND if absent or expired; refreshes the entry's use time.
  absl::StatusOr<Entry> Get(const std::string& sha256);
  bool Contains(const std::string& sha256);

  int64_t bytes() const;
  int64_t size() const;
  int64_t evictions() const;
  const UploadStoreOptions& options() const { return options_; }

 private:
  struct Item {
    std::string sha256;
    Entry entry;
    absl::Time last_use;
  };
  using List = std::list<Item>;  // front = most recently used

  void ExpireLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EraseLocked(List::iterator it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const UploadStoreOptions options_;
  mutable absl::Mutex mu_;
  List lru_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, List::iterator> index_ ABSL_GUARDED_BY(mu_);
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t evictions_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_UPLOAD_STORE_H_
