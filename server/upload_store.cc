#include "server/upload_store.h"

#include "absl/strings/str_cat.h"

namespace quantd::server {

UploadStore::UploadStore(UploadStoreOptions options)
    : options_(std::move(options)) {}

absl::StatusOr<bool> UploadStore::Put(const std::string& sha256, int kind,
                                      std::shared_ptr<const std::string> data) {
  const int64_t size = static_cast<int64_t>(data->size());
  if (size > options_.max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("upload of ", size, " bytes exceeds the upload store's ",
                     options_.max_bytes, " bytes"));
  }
  const absl::Time now = options_.clock();
  absl::MutexLock lock(&mu_);
  ExpireLocked(now);
  if (auto found = index_.find(sha256); found != index_.end()) {
    found->second->last_use = now;
    lru_.splice(lru_.begin(), lru_, found->second);
    return true;
  }
  while (bytes_ + size > options_.max_bytes && !lru_.empty()) {
    EraseLocked(std::prev(lru_.end()));
    ++evictions_;
  }
  lru_.push_front(Item{sha256, Entry{kind, std::move(data)}, now});
  index_[sha256] = lru_.begin();
  bytes_ += size;
  return false;
}

absl::StatusOr<UploadStore::Entry> UploadStore::Get(const std::string& sha256) {
  const absl::Time now = options_.clock();
  absl::MutexLock lock(&mu_);
  ExpireLocked(now);
  auto found = index_.find(sha256);
  if (found == index_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no upload with sha256 ", sha256,
                     " (never uploaded, expired or evicted; upload it again)"));
  }
  found->second->last_use = now;
  lru_.splice(lru_.begin(), lru_, found->second);
  return found->second->entry;
}

bool UploadStore::Contains(const std::string& sha256) {
  return Get(sha256).ok();
}

int64_t UploadStore::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
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
  index_.erase(it->sha256);
  lru_.erase(it);
}

}  // namespace quantd::server
