#include "server/client_metadata.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace quantd::server {
namespace {

bool IsPrintable(unsigned char c) { return c >= 0x20 && c <= 0x7E; }

}  // namespace

std::string MetadataSafe(absl::string_view value, size_t max_bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  value = value.substr(0, max_bytes);
  std::string out;
  out.reserve(value.size());
  for (const unsigned char c : value) {
    if (IsPrintable(c) && c != '%') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

bool IsLegalMetadataValue(absl::string_view value) {
  return std::all_of(value.begin(), value.end(),
                     [](char c) { return IsPrintable(c); });
}

std::string TruncateStatusMessage(absl::string_view message) {
  if (message.size() <= kMaxStatusMessageBytes) return std::string(message);
  // Room for the longest suffix: " ... (18446744073709551615 more errors)".
  constexpr size_t kSuffixRoom = 48;
  const absl::string_view head =
      message.substr(0, kMaxStatusMessageBytes - kSuffixRoom);
  const size_t line_end = head.rfind('\n');
  if (line_end != absl::string_view::npos && line_end > 0) {
    const absl::string_view rest = message.substr(line_end + 1);
    const size_t dropped = 1 + std::count(rest.begin(), rest.end(), '\n');
    return absl::StrCat(message.substr(0, line_end), "\n  ... (", dropped,
                        dropped == 1 ? " more error)" : " more errors)");
  }
  // One long line (a long name echoed back): cut at a UTF-8 boundary.
  size_t cut = head.size();
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  return absl::StrCat(message.substr(0, cut), " ... (", message.size() - cut,
                      " more bytes)");
}

}  // namespace quantd::server
