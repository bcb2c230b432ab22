// Sample sets on disk (DESIGN.md, "Sample sets on disk"):
//
//   DIR/<sample>/<input>.npy   one subfolder per sample, taken in byte-wise
//                              sorted order, one file per model input named
//                              after it (or <input>.pb, an ONNX TensorProto)
//   DIR/<sample>.npy|.pb       a single-input model may use plain files
//
// File names are the input names with every character outside
// [A-Za-z0-9_.-] replaced by '_'. Outputs are written in the same layout, one
// `.npy` per output. Hidden entries and files that are not .npy/.pb are
// ignored; every error names the file or folder and the input at fault.
//
//   ASSIGN_OR_RETURN(SampleSet set, ReadSampleSet(dir, {"input", "sr"}));
//   for (size_t i = 0; i < set.size(); ++i) Run(set.samples[i]);
#ifndef QUANTD_CORE_IO_SAMPLE_SET_H_
#define QUANTD_CORE_IO_SAMPLE_SET_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/graph/tensor.h"
#include "core/io/npy.h"

namespace quantd {

// "input:0" -> "input_0".
std::string SanitizeTensorName(absl::string_view name);

// Reads a .npy or a TensorProto .pb file (chosen by extension).
absl::StatusOr<Tensor> ReadTensorFile(
    const std::string& path,
    int64_t max_tensor_bytes = kDefaultMaxSampleTensorBytes);

struct SampleSetOptions {
  int64_t max_tensor_bytes = kDefaultMaxSampleTensorBytes;
  // Over the whole set, checked file by file before each is read.
  int64_t max_total_bytes = int64_t{16} << 30;
  int64_t max_samples = 1'000'000;
};

struct SampleSet {
  std::vector<std::string> names;  // sample names (folder or file stem)
  // One map per sample: model input name -> tensor.
  std::vector<std::map<std::string, Tensor>> samples;
  size_t size() const { return samples.size(); }
};

// Reads the set for a model whose inputs are `input_names` (the graph inputs
// that are not initializers). Every sample must have exactly one file per
// input; a file that matches no input is an error.
absl::StatusOr<SampleSet> ReadSampleSet(
    const std::string& dir, const std::vector<std::string>& input_names,
    const SampleSetOptions& options = {});

// Writes DIR/<sample_name>/<sanitized tensor name>.npy for every tensor.
// `sample_name` must be a plain folder name (no '/', not "." or ".."), and
// `dir` not empty or blank.
absl::Status WriteSample(const std::string& dir, absl::string_view sample_name,
                         const std::map<std::string, Tensor>& tensors);

// WriteSample for every sample of `set`.
absl::Status WriteSampleSet(const std::string& dir, const SampleSet& set);

}  // namespace quantd

#endif  // QUANTD_CORE_IO_SAMPLE_SET_H_
