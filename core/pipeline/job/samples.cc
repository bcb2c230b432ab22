#include "core/pipeline/job/samples.h"

#include <cmath>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

bool IsSampleDType(int32_t t) {
  switch (static_cast<DType>(t)) {
    case DType::kFloat:
    case DType::kUint8:
    case DType::kInt8:
    case DType::kUint16:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kBool:
    case DType::kFloat16:
    case DType::kDouble:
      return true;
    default:
      return false;
  }
}

// The first NaN or Inf among `n` values of type T stored at `bytes` (any
// alignment: a proto's raw_data is read in place, not copied).
template <typename T>
absl::Status CheckFiniteValues(const char* bytes, int64_t n,
                               absl::string_view what) {
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, bytes + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": element ", i, " is ", std::isnan(v) ? "NaN" : "infinite"));
    }
  }
  return absl::OkStatus();
}

// No NaN or Inf in float and double samples.
absl::Status CheckFinite(DType dtype, const char* bytes, int64_t n,
                         absl::string_view what) {
  if (dtype == DType::kFloat) return CheckFiniteValues<float>(bytes, n, what);
  if (dtype == DType::kDouble) return CheckFiniteValues<double>(bytes, n, what);
  return absl::OkStatus();
}

std::string ShapeString(const std::vector<int64_t>& s) {
  return absl::StrCat("[", absl::StrJoin(s, ","), "]");
}

// What a sample proto declares, checked against its raw_data.
struct SampleHeader {
  DType dtype;
  std::vector<int64_t> dims;
  int64_t elements;
};

// TensorFromSampleProto's checks, without the copy.
absl::StatusOr<SampleHeader> CheckSampleProto(const v1::Tensor& proto,
                                              absl::string_view what,
                                              int64_t max_bytes) {
  if (!IsSampleDType(proto.data_type())) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": unsupported data_type ", proto.data_type()));
  }
  SampleHeader h{static_cast<DType>(proto.data_type()),
                 {proto.dims().begin(), proto.dims().end()},
                 0};
  for (size_t i = 0; i < h.dims.size(); ++i) {
    if (h.dims[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": dim ", i, " is negative (", h.dims[i], ")"));
    }
  }
  h.elements = NumElements(h.dims);
  const int64_t n = h.elements;
  const int64_t esize = static_cast<int64_t>(DTypeSize(h.dtype));
  if (n < 0 || (n > 0 && esize > max_bytes / n)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": shape ", ShapeString(h.dims), " exceeds the size limit"));
  }
  if (static_cast<int64_t>(proto.raw_data().size()) != n * esize) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": raw_data has ", proto.raw_data().size(), " bytes, shape ",
        ShapeString(h.dims), " of ", DTypeName(h.dtype), " needs ", n * esize));
  }
  return h;
}

}  // namespace

absl::StatusOr<Tensor> TensorFromSampleProto(const v1::Tensor& proto,
                                             absl::string_view what,
                                             int64_t max_bytes) {
  ASSIGN_OR_RETURN(const SampleHeader h,
                   CheckSampleProto(proto, what, max_bytes));
  ASSIGN_OR_RETURN(Tensor t, Tensor::Create(h.dtype, h.dims, max_bytes));
  if (t.byte_size() > 0) {
    std::memcpy(t.mutable_raw(), proto.raw_data().data(), t.byte_size());
  }
  return t;
}

v1::Tensor TensorToSampleProto(const Tensor& tensor, const std::string& name) {
  v1::Tensor p;
  p.set_name(name);
  p.set_data_type(static_cast<v1::DataType>(tensor.dtype()));
  for (int64_t d : tensor.shape()) p.add_dims(d);
  p.set_raw_data(static_cast<const char*>(tensor.raw()), tensor.byte_size());
  return p;
}

absl::Status ValidateSampleProtos(
    const google::protobuf::RepeatedPtrField<v1::Sample>& samples,
    absl::string_view field, int64_t max_samples, int64_t max_total_bytes) {
  if (samples.size() > max_samples) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": ", samples.size(), " samples, the limit is ", max_samples));
  }
  int64_t total = 0;
  for (int s = 0; s < samples.size(); ++s) {
    std::set<std::string> names;
    for (int i = 0; i < samples[s].inputs_size(); ++i) {
      const v1::Tensor& t = samples[s].inputs(i);
      const std::string what =
          absl::StrCat(field, "[", s, "] input '", t.name(), "'");
      if (!names.insert(t.name()).second) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": given twice"));
      }
      total += static_cast<int64_t>(t.raw_data().size());
      if (total > max_total_bytes) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ": samples exceed ", max_total_bytes,
                         " bytes in total (at sample ", s, ")"));
      }
      ASSIGN_OR_RETURN(const SampleHeader h,
                       CheckSampleProto(t, what, max_total_bytes));
      RETURN_IF_ERROR(
          CheckFinite(h.dtype, t.raw_data().data(), h.elements, what));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SampleFeeds>> DecodeSamples(
    const google::protobuf::RepeatedPtrField<v1::Sample>& samples,
    const std::vector<ValueInfo>& model_inputs, absl::string_view field,
    int64_t max_total_bytes) {
  std::map<std::string, const ValueInfo*> by_name;
  for (const auto& in : model_inputs) by_name[in.name] = &in;
  std::vector<SampleFeeds> out;
  out.reserve(samples.size());
  for (int s = 0; s < samples.size(); ++s) {
    SampleFeeds feeds;
    for (int i = 0; i < samples[s].inputs_size(); ++i) {
      const v1::Tensor& p = samples[s].inputs(i);
      const std::string what =
          absl::StrCat(field, "[", s, "] input '", p.name(), "'");
      auto it = by_name.find(p.name());
      if (it == by_name.end()) {
        std::vector<std::string> names;
        for (const auto& [n, v] : by_name) names.push_back(n);
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": the model has no such input (inputs: ",
                         absl::StrJoin(names, ", "), ")"));
      }
      ASSIGN_OR_RETURN(Tensor t,
                       TensorFromSampleProto(p, what, max_total_bytes));
      RETURN_IF_ERROR(CheckFinite(t.dtype(), static_cast<const char*>(t.raw()),
                                  t.num_elements(), what));
      const ValueInfo& vi = *it->second;
      if (vi.dtype != DType::kUndefined && t.dtype() != vi.dtype) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": dtype ", DTypeName(t.dtype()),
                         ", model expects ", DTypeName(vi.dtype)));
      }
      if (vi.has_shape) {
        if (t.rank() != static_cast<int>(vi.shape.size())) {
          return absl::InvalidArgumentError(absl::StrCat(
              what, ": shape ", ShapeString(t.shape()), " has rank ", t.rank(),
              ", model expects ", ShapeString(vi.shape)));
        }
        for (int d = 0; d < t.rank(); ++d) {
          if (vi.shape[d] >= 0 && vi.shape[d] != t.dim(d)) {
            return absl::InvalidArgumentError(absl::StrCat(
                what, ": dim ", d, " is ", t.dim(d), ", model expects ",
                vi.shape[d], " (model shape ", ShapeString(vi.shape), ")"));
          }
        }
      }
      feeds[p.name()] = std::move(t);
    }
    for (const auto& [name, vi] : by_name) {
      if (feeds.count(name) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, "[", s, "]: missing input '", name, "'"));
      }
    }
    out.push_back(std::move(feeds));
  }
  return out;
}

}  // namespace quantd
