#include "core/util/request_checks.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"

namespace quantd {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Message types with checks of their own.
bool Skipped(const google::protobuf::Descriptor* type) {
  const std::string& name = type->full_name();
  return name == "quantd.v1.Sample" || name == "quantd.v1.TpcRef" ||
         name == "quantd.v1.TargetPlatformCapabilities";
}

// Where +inf is a documented setting ("off").
bool AllowsPositiveInfinity(const FieldDescriptor* field) {
  return field->full_name() == "quantd.v1.QuantizationConfig.z_threshold";
}

std::string Path(const std::string& prefix, const FieldDescriptor* field,
                 int index) {
  std::string path =
      prefix.empty() ? field->name() : absl::StrCat(prefix, ".", field->name());
  if (index >= 0) absl::StrAppend(&path, "[", index, "]");
  return path;
}

absl::Status CheckNumber(double v, const FieldDescriptor* field,
                         const std::string& path) {
  if (std::isfinite(v)) return absl::OkStatus();
  if (v > 0 && AllowsPositiveInfinity(field)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": ", v, " is not a finite number"));
}

absl::Status CheckMessage(const Message& m, const std::string& prefix);

// One value of `field` (index -1: a singular field).
absl::Status CheckValue(const Message& m, const Reflection& r,
                        const FieldDescriptor* field, int index,
                        const std::string& path) {
  const bool repeated = index >= 0;
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_ENUM: {
      const int v = repeated ? r.GetRepeatedEnumValue(m, field, index)
                             : r.GetEnumValue(m, field);
      if (field->enum_type()->FindValueByNumber(v) == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": ", v, " is not a value of ",
                         field->enum_type()->full_name()));
      }
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return CheckNumber(repeated ? r.GetRepeatedDouble(m, field, index)
                                  : r.GetDouble(m, field),
                         field, path);
    case FieldDescriptor::CPPTYPE_FLOAT:
      return CheckNumber(
          repeated ? r.GetRepeatedFloat(m, field, index) : r.GetFloat(m, field),
          field, path);
    case FieldDescriptor::CPPTYPE_MESSAGE: {
      const Message& child = repeated ? r.GetRepeatedMessage(m, field, index)
                                      : r.GetMessage(m, field);
      if (Skipped(child.GetDescriptor())) return absl::OkStatus();
      return CheckMessage(child, path);
    }
    default:
      return absl::OkStatus();
  }
}

absl::Status CheckMessage(const Message& m, const std::string& prefix) {
  const Reflection& r = *m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r.ListFields(m, &fields);  // the set ones only
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
        Skipped(field->message_type())) {
      continue;
    }
    if (field->is_repeated()) {
      const int n = r.FieldSize(m, field);
      for (int i = 0; i < n; ++i) {
        absl::Status st = CheckValue(m, r, field, i, Path(prefix, field, i));
        if (!st.ok()) return st;
      }
    } else {
      absl::Status st = CheckValue(m, r, field, -1, Path(prefix, field, -1));
      if (!st.ok()) return st;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckRequestId(absl::string_view request_id) {
  if (request_id.size() <= kMaxRequestIdChars) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("request_id: ", request_id.size(), " characters, at most ",
                   kMaxRequestIdChars));
}

absl::Status CheckNumThreads(int num_threads, absl::string_view field) {
  if (num_threads >= 0 && num_threads <= kMaxNumThreads) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": ", num_threads, " is not in [0, ", kMaxNumThreads,
                   "] (0: the server's default)"));
}

absl::Status CheckEnumsAndNumbers(const Message& message) {
  return CheckMessage(message, "");
}

}  // namespace quantd
