// TPC parsing and validation. The first byte picks the format, the rest is
// the document: 0 MCT JSON, 1 protobuf text format, 2 binary
// TargetPlatformCapabilities. Whatever parses is validated and, when valid,
// written back as JSON, which must parse again (the export is MCT's format).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/tpc/json_io.h"
#include "core/tpc/validation.h"
#include "quantd/v1/tpc.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int mode = data[0] % 3;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  quantd::v1::TargetPlatformCapabilities tpc;
  if (mode == 0) {
    auto parsed = quantd::tpc::TpcFromJson(text);
    if (!parsed.ok()) return 0;
    tpc = *std::move(parsed);
  } else if (mode == 1) {
    auto parsed = quantd::tpc::TpcFromTextproto(text);
    if (!parsed.ok()) return 0;
    tpc = *std::move(parsed);
  } else if (!tpc.ParseFromArray(text.data(), static_cast<int>(text.size()))) {
    return 0;
  }
  (void)quantd::tpc::TpcWarnings(tpc);
  if (!quantd::tpc::TpcErrors(tpc).empty()) return 0;
  const std::string json = quantd::tpc::TpcToJson(tpc);
  if (!quantd::tpc::TpcFromJson(json).ok()) abort();
  return 0;
}
