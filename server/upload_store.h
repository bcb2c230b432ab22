// Content-addressed store of uploaded models and sample sets.
//
// Keyed by sha256 (so uploads are idempotent) within a client's space (its
// identity, ServiceContext::Authenticate): one client cannot use, probe or
// keep alive another's uploads. The budget is shared. Bounded: the stored bytes
// plus the bytes reserved by uploads still in flight never exceed
// `max_bytes` (least recently used entries go first; reservations are never
// evicted) and an entry unused for `ttl` expires. Entries are immutable and
// shared, so a job keeps its bytes alive even if the store evicts them
// meanwhile.
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
#include "absl/strings/string_view.h"
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
    // Bit k set: uploaded as v1::UploadKind k. The same bytes uploaded as
    // another kind are usable as both.
    uint32_t kinds = 0;
    std::shared_ptr<const std::string> data;

    bool has_kind(int kind) const {
      return kind >= 0 && kind < 32 && (kinds >> kind) & 1u;
    }
    // The lowest kind it was uploaded as.
    int first_kind() const;
  };

  // Bytes an upload in flight holds against the budget until it is stored
  // (Put) or given up (destroyed).
  class Reservation {
   public:
    ~Reservation();
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    int64_t bytes() const { return bytes_; }

   private:
    friend class UploadStore;
    Reservation(UploadStore* store, int64_t bytes)
        : store_(store), bytes_(bytes) {}
    UploadStore* store_;
    int64_t bytes_;
  };

  explicit UploadStore(UploadStoreOptions options);

  // Reserves `bytes` for an upload about to arrive, evicting stored entries
  // if needed. RESOURCE_EXHAUSTED naming --upload_store_mb if uploads in
  // flight leave no room for it.
  absl::StatusOr<std::unique_ptr<Reservation>> Reserve(int64_t bytes);

  // Stores `data` under `sha256` (which the caller has verified against the
  // data). Returns true if the content was already present (its use time is
  // refreshed and `kind` added to its kinds).
  // RESOURCE_EXHAUSTED if it alone exceeds the byte budget.
  // With a reservation (of at least data's size) the entry takes its place.
  absl::StatusOr<bool> Put(const std::string& sha256, int kind,
                           std::shared_ptr<const std::string> data,
                           std::unique_ptr<Reservation> reservation = nullptr,
                           absl::string_view space = "");
  // NOT_FOUND if absent or expired; refreshes the entry's use time.
  absl::StatusOr<Entry> Get(const std::string& sha256,
                            absl::string_view space = "");
  bool Contains(const std::string& sha256, absl::string_view space = "");

  int64_t bytes() const;           // stored
  int64_t reserved_bytes() const;  // held by uploads in flight
  int64_t size() const;
  int64_t evictions() const;
  const UploadStoreOptions& options() const { return options_; }

 private:
  struct Item {
    std::string key;  // Key(space, sha256)
    Entry entry;
    absl::Time last_use;
  };
  using List = std::list<Item>;  // front = most recently used

  static std::string Key(absl::string_view space, const std::string& sha256);
  void ExpireLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EraseLocked(List::iterator it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Evicts least recently used entries until `more` bytes fit.
  void MakeRoomLocked(int64_t more) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Unreserve(int64_t bytes);

  const UploadStoreOptions options_;
  mutable absl::Mutex mu_;
  List lru_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, List::iterator> index_ ABSL_GUARDED_BY(mu_);
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t reserved_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t evictions_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_UPLOAD_STORE_H_
