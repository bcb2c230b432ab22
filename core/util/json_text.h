// JSON text of a document whose strings may hold bytes that are not UTF-8:
// names from the user's ONNX model, a TPC parsed from text or binary proto,
// client-chosen ids. nlohmann's dump() throws on such bytes (type_error.316,
// which ended the process: tpc_fuzzer); here they become U+FFFD.
#ifndef QUANTD_CORE_UTIL_JSON_TEXT_H_
#define QUANTD_CORE_UTIL_JSON_TEXT_H_

#include <string>

#include "nlohmann/json.hpp"

namespace quantd {

// Json: nlohmann::json or ordered_json (kept as it is, keys in their order).
// indent -1: one line.
template <typename Json>
std::string JsonText(const Json& j, int indent) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace quantd

#endif  // QUANTD_CORE_UTIL_JSON_TEXT_H_
