#include "clients/batch/proto_output.h"

#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/type_resolver.h"
#include "google/protobuf/util/type_resolver_util.h"

namespace quantd {

std::string SerializeDeterministic(const google::protobuf::Message& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return out;
}

absl::StatusOr<std::string> ToDeterministicJson(
    const google::protobuf::Message& message) {
  const std::string kPrefix = "type.googleapis.com";
  std::unique_ptr<google::protobuf::util::TypeResolver> resolver(
      google::protobuf::util::NewTypeResolverForDescriptorPool(
          kPrefix, message.GetDescriptor()->file()->pool()));
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  std::string json;
  auto status = google::protobuf::util::BinaryToJsonString(
      resolver.get(),
      absl::StrCat(kPrefix, "/", message.GetDescriptor()->full_name()),
      SerializeDeterministic(message), &json, options);
  if (!status.ok()) {
    return absl::InternalError(
        absl::StrCat("JSON conversion failed: ", status.ToString()));
  }
  return json;
}

}  // namespace quantd
