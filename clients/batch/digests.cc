#include "clients/batch/digests.h"

#include "absl/strings/str_cat.h"
#include "clients/batch/proto_output.h"
#include "core/util/sha256.h"
#include "nlohmann/json.hpp"

namespace quantd::batch {

std::string InputDigest(const v1::QuantizeRequest& request) {
  v1::QuantizeRequest copy = request;
  copy.clear_request_id();
  // The version prefix changes when what the digest covers changes.
  return Sha256Hex(
      absl::StrCat("quantd-batch-input-v1\n", SerializeDeterministic(copy)));
}

std::vector<FileDigest> DigestFiles(
    const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<FileDigest> digests;
  for (const auto& [name, bytes] : files) {
    FileDigest d;
    d.name = name;
    d.bytes = static_cast<int64_t>(bytes.size());
    d.sha256 = Sha256Hex(bytes);
    d.compared_sha256 = d.sha256;
    if (name == "report.json") {
      d.deterministic = false;
      nlohmann::json report =
          nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
      if (report.is_object()) {
        report.erase("timings_seconds");
        // dump() writes keys in sorted order: a canonical text.
        d.compared_sha256 = Sha256Hex(report.dump());
      }
    } else if (name == "report.html") {
      d.deterministic = false;
      d.compared_sha256.clear();
    }
    digests.push_back(std::move(d));
  }
  return digests;
}

std::string ResultDigest(const std::vector<FileDigest>& files) {
  std::string text = "quantd-batch-result-v1\n";
  for (const auto& f : files) {
    if (f.compared_sha256.empty()) continue;
    absl::StrAppend(&text, f.name, " ", f.compared_sha256, "\n");
  }
  return Sha256Hex(text);
}

}  // namespace quantd::batch
