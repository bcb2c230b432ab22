#include "core/io/sample_set.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/graph/onnx_import.h"
#include "core/io/file_util.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

namespace fs = std::filesystem;

bool IsTensorFile(absl::string_view name) {
  return absl::EndsWith(name, ".npy") || absl::EndsWith(name, ".pb");
}

std::string Stem(absl::string_view name) {
  return std::string(name.substr(0, name.rfind('.')));
}

struct Entries {
  std::vector<std::string> dirs;
  std::vector<std::string> tensor_files;
};

// Non-hidden subfolders and .npy/.pb files of `dir`, byte-wise sorted.
absl::StatusOr<Entries> ListDir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return fs::exists(dir, ec)
               ? absl::InvalidArgumentError(absl::StrCat(dir, ": not a folder"))
               : absl::NotFoundError(absl::StrCat(dir, ": no such folder"));
  }
  Entries entries;
  fs::directory_iterator it(dir, ec), end;
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": cannot list: ", ec.message()));
  }
  for (; it != end; it.increment(ec)) {
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir, ": cannot list: ", ec.message()));
    }
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    if (it->is_directory(ec)) {
      entries.dirs.push_back(name);
    } else if (IsTensorFile(name) && it->is_regular_file(ec)) {
      entries.tensor_files.push_back(name);
    }
  }
  std::sort(entries.dirs.begin(), entries.dirs.end());
  std::sort(entries.tensor_files.begin(), entries.tensor_files.end());
  return entries;
}

class SetReader {
 public:
  explicit SetReader(const SampleSetOptions& options) : options_(options) {}

  absl::StatusOr<Tensor> Read(const std::string& path,
                              absl::string_view input) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (!ec) {
      total_bytes_ += static_cast<int64_t>(size);
      if (total_bytes_ > options_.max_total_bytes) {
        return absl::ResourceExhaustedError(
            absl::StrCat(path, ": the sample set exceeds the limit of ",
                         options_.max_total_bytes, " bytes"));
      }
    }
    auto tensor = ReadTensorFile(path, options_.max_tensor_bytes);
    if (!tensor.ok()) {
      return absl::Status(
          tensor.status().code(),
          absl::StrCat("input '", input, "': ", tensor.status().message()));
    }
    return tensor;
  }

 private:
  const SampleSetOptions& options_;
  int64_t total_bytes_ = 0;
};

absl::Status CheckSampleName(absl::string_view name) {
  if (name.empty() || name == "." || name == ".." ||
      name.find('/') != absl::string_view::npos ||
      name.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("sample name '", name, "' is not a plain folder name"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string SanitizeTensorName(absl::string_view name) {
  std::string out(name);
  for (char& c : out) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                    (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!ok) c = '_';
  }
  return out;
}

absl::StatusOr<Tensor> ReadTensorFile(const std::string& path,
                                      int64_t max_tensor_bytes) {
  if (absl::EndsWith(path, ".npy")) return ReadNpyFile(path, max_tensor_bytes);
  if (absl::EndsWith(path, ".pb")) {
    // A TensorProto carries a little framing beyond its data.
    ASSIGN_OR_RETURN(std::string bytes,
                     ReadFileLimited(path, max_tensor_bytes + (1 << 20)));
    auto tensor = ImportTensorProto(bytes, max_tensor_bytes);
    if (!tensor.ok()) {
      return absl::Status(tensor.status().code(),
                          absl::StrCat(path, ": ", tensor.status().message()));
    }
    return tensor;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": not a .npy or .pb tensor file"));
}

absl::StatusOr<SampleSet> ReadSampleSet(
    const std::string& dir, const std::vector<std::string>& input_names,
    const SampleSetOptions& options) {
  if (input_names.empty()) {
    return absl::InvalidArgumentError("the model has no inputs to feed");
  }
  // File stem -> input name; two inputs must not share a file name.
  std::map<std::string, std::string> by_stem;
  for (const std::string& input : input_names) {
    auto [it, inserted] = by_stem.emplace(SanitizeTensorName(input), input);
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat("inputs '", it->second, "' and '", input,
                       "' have the same sample file name '", it->first, "'"));
    }
  }
  ASSIGN_OR_RETURN(Entries top, ListDir(dir));
  if (!top.dirs.empty() && !top.tensor_files.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        dir, ": mixes sample folders ('", top.dirs[0],
        "') and plain tensor files ('", top.tensor_files[0], "')"));
  }
  const size_t count = top.dirs.size() + top.tensor_files.size();
  if (count == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        dir, ": no samples (expected one folder per sample, or .npy files)"));
  }
  if (static_cast<int64_t>(count) > options.max_samples) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": ", count, " samples exceed the limit of ",
                     options.max_samples));
  }
  SetReader reader(options);
  SampleSet set;
  if (!top.tensor_files.empty()) {
    if (input_names.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          dir, ": plain tensor files ('", top.tensor_files[0],
          "') need a single-input model; this one has ", input_names.size(),
          " inputs (", absl::StrJoin(input_names, ", "),
          "): use one folder per sample"));
    }
    for (const std::string& file : top.tensor_files) {
      const std::string stem = Stem(file);
      if (!set.names.empty() && set.names.back() == stem) {
        return absl::InvalidArgumentError(absl::StrCat(
            dir, ": sample '", stem, "' has both a .npy and a .pb file"));
      }
      ASSIGN_OR_RETURN(Tensor t, reader.Read((fs::path(dir) / file).string(),
                                             input_names[0]));
      set.names.push_back(stem);
      set.samples.push_back({{input_names[0], std::move(t)}});
    }
    return set;
  }
  for (const std::string& sample : top.dirs) {
    const std::string sample_dir = (fs::path(dir) / sample).string();
    ASSIGN_OR_RETURN(Entries files, ListDir(sample_dir));
    std::map<std::string, Tensor> feeds;
    for (const std::string& file : files.tensor_files) {
      const std::string path = (fs::path(sample_dir) / file).string();
      auto it = by_stem.find(Stem(file));
      if (it == by_stem.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": no model input is named '", Stem(file),
                         "' (inputs: ", absl::StrJoin(input_names, ", "), ")"));
      }
      if (feeds.count(it->second)) {
        return absl::InvalidArgumentError(absl::StrCat(
            sample_dir, ": two files for input '", it->second, "'"));
      }
      ASSIGN_OR_RETURN(Tensor t, reader.Read(path, it->second));
      feeds.emplace(it->second, std::move(t));
    }
    for (const std::string& input : input_names) {
      if (!feeds.count(input)) {
        return absl::InvalidArgumentError(
            absl::StrCat(sample_dir, ": missing ", SanitizeTensorName(input),
                         ".npy for input '", input, "'"));
      }
    }
    set.names.push_back(sample);
    set.samples.push_back(std::move(feeds));
  }
  return set;
}

absl::Status WriteSample(const std::string& dir, absl::string_view sample_name,
                         const std::map<std::string, Tensor>& tensors) {
  // An empty folder would mean the current one: the caller must say where.
  if (absl::StripAsciiWhitespace(dir).empty()) {
    return absl::InvalidArgumentError("sample-set folder: empty name");
  }
  RETURN_IF_ERROR(CheckSampleName(sample_name));
  std::map<std::string, std::string> used;  // file name -> tensor name
  for (const auto& [name, tensor] : tensors) {
    const std::string file = SanitizeTensorName(name) + ".npy";
    auto [it, inserted] = used.emplace(file, name);
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat("outputs '", it->second, "' and '", name,
                       "' have the same file name '", file, "'"));
    }
    const std::string path =
        (fs::path(dir) / std::string(sample_name) / file).string();
    RETURN_IF_ERROR(WriteNpyFile(path, tensor));
  }
  return absl::OkStatus();
}

absl::Status WriteSampleSet(const std::string& dir, const SampleSet& set) {
  if (set.names.size() != set.samples.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sample set has ", set.names.size(), " names for ",
                     set.samples.size(), " samples"));
  }
  for (size_t i = 0; i < set.size(); ++i) {
    RETURN_IF_ERROR(WriteSample(dir, set.names[i], set.samples[i]));
  }
  return absl::OkStatus();
}

}  // namespace quantd
