#include "server/upload_store.h"

#include "absl/strings/str_cat.h"

namespace quantd::server {

namespace {
constexpr int64_t kMiB = int64_t{1} << 20;
}  // namespace

int UploadStore::Entry::first_kind() const {
  for (int k = 0; k < 32; ++k) {
    if (has_kind(k)) return k;
  }
  return 0;
}

UploadStore::Reservation::~Reservation() {
  if (bytes_ > 0) store_->Unreserve(bytes_);
}

UploadStore::UploadStore(UploadStoreOptions options)
    : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<UploadStore::Reservation>> UploadStore::Reserve(
    int64_t bytes) {
  if (bytes < 0) bytes = 0;
  if (bytes > options_.max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "upload of ", bytes, " bytes exceeds the upload store's ",
        options_.max_bytes,
        " bytes (--upload_store_mb=", options_.max_bytes / kMiB, ")"));
  }
  absl::MutexLock lock(&mu_);
  if (reserved_ + bytes > options_.max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "upload of ", bytes, " bytes does not fit: uploads in flight hold ",
        reserved_, " of the upload store's ", options_.max_bytes,
        " bytes (--upload_store_mb=", options_.max_bytes / kMiB,
        "); retry later"));
  }
  ExpireLocked(options_.clock());
  MakeRoomLocked(bytes);
  reserved_ += bytes;
  return std::unique_ptr<Reservation>(new Reservation(this, bytes));
}

void UploadStore::Unreserve(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  reserved_ -= bytes;
}

void UploadStore::MakeRoomLocked(int64_t more) {
  while (bytes_ + reserved_ + more > options_.max_bytes && !lru_.empty()) {
    EraseLocked(std::prev(lru_.end()));
    ++evictions_;
  }
}

absl::StatusOr<bool> UploadStore::Put(const std::string& sha256, int kind,
                                      std::shared_ptr<const std::string> data,
                                      std::unique_ptr<Reservation> reservation,
                                      absl::string_view space) {
  const std::string key = Key(space, sha256);
  const int64_t size = static_cast<int64_t>(data->size());
  if (size > options_.max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "upload of ", size, " bytes exceeds the upload store's ",
        options_.max_bytes,
        " bytes (--upload_store_mb=", options_.max_bytes / kMiB, ")"));
  }
  const absl::Time now = options_.clock();
  absl::MutexLock lock(&mu_);
  if (reservation != nullptr) {
    // The entry takes the reservation's place under the same lock.
    reserved_ -= reservation->bytes_;
    reservation->bytes_ = 0;
  }
  ExpireLocked(now);
  const uint32_t kind_bit = kind >= 0 && kind < 32 ? 1u << kind : 0u;
  if (auto found = index_.find(key); found != index_.end()) {
    found->second->entry.kinds |= kind_bit;
    found->second->last_use = now;
    lru_.splice(lru_.begin(), lru_, found->second);
    return true;
  }
  MakeRoomLocked(size);
  lru_.push_front(Item{key, Entry{kind_bit, std::move(data)}, now});
  index_[key] = lru_.begin();
  bytes_ += size;
  return false;
}

absl::StatusOr<UploadStore::Entry> UploadStore::Get(const std::string& sha256,
                                                    absl::string_view space) {
  const std::string key = Key(space, sha256);
  const absl::Time now = options_.clock();
  absl::MutexLock lock(&mu_);
  ExpireLocked(now);
  auto found = index_.find(key);
  if (found == index_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no upload with sha256 ", sha256,
                     " (never uploaded, expired or evicted; upload it again)"));
  }
  found->second->last_use = now;
  lru_.splice(lru_.begin(), lru_, found->second);
  return found->second->entry;
}

bool UploadStore::Contains(const std::string& sha256, absl::string_view space) {
  return Get(sha256, space).ok();
}

std::string UploadStore::Key(absl::string_view space,
                             const std::string& sha256) {
  return space.empty() ? sha256 : absl::StrCat(space, "/", sha256);
}

int64_t UploadStore::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

int64_t UploadStore::reserved_bytes() const {
  absl::MutexLock lock(&mu_);
  return reserved_;
}

int64_t UploadStore::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(lru_.size());
}

int64_t UploadStore::evictions() const {
  absl::MutexLock lock(&mu_);
  return evictions_;
}

void UploadStore::ExpireLocked(absl::Time now) {
  // The list is ordered by use time, so expired entries sit at the back.
  while (!lru_.empty() && now - lru_.back().last_use > options_.ttl) {
    EraseLocked(std::prev(lru_.end()));
  }
}

void UploadStore::EraseLocked(List::iterator it) {
  bytes_ -= static_cast<int64_t>(it->entry.data->size());
  index_.erase(it->key);
  lru_.erase(it);
}

}  // namespace quantd::server
