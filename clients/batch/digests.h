// Digests that make a batch resumable and its results comparable.
//
// The input digest is the SHA-256 of the deterministic serialization of the
// QuantizeRequest a job sends (model bytes, samples, TPC, options; no
// request id), so a job is redone exactly when anything it sends changed.
// Output digests cover every file; report.json also gets a digest without
// its wall-clock `timings_seconds`, and report.html (which shows timings)
// is not compared. The result digest combines the deterministic content:
// equal result digests mean byte-identical model.qdq.onnx,
// quantized_graph.pb and quantized_graph.json and an equal report.json
// apart from timings.
#ifndef QUANTD_CLIENTS_BATCH_DIGESTS_H_
#define QUANTD_CLIENTS_BATCH_DIGESTS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "quantd/v1/job.pb.h"

namespace quantd::batch {

std::string InputDigest(const v1::QuantizeRequest& request);

struct FileDigest {
  std::string name;
  int64_t bytes = 0;
  std::string sha256;
  // False for files that carry wall-clock timings.
  bool deterministic = true;
  // sha256 of the content that is compared (report.json without timings);
  // equals `sha256` for deterministic files, empty when not compared.
  std::string compared_sha256;
};

std::vector<FileDigest> DigestFiles(
    const std::vector<std::pair<std::string, std::string>>& files);

std::string ResultDigest(const std::vector<FileDigest>& files);

}  // namespace quantd::batch

#endif  // QUANTD_CLIENTS_BATCH_DIGESTS_H_
