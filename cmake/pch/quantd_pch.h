// Precompiled per library when QUANTD_PCH is on (cmake/QuantdHelpers.cmake):
// the standard, absl and protobuf headers nearly every source file parses.
// Parsing them was 1-1.5 s of each file's 2-10 s in the sanitizer trees.
// Only system headers here: a project header would make every file of the
// library rebuild when it changes. Files still include what they use.
#ifndef QUANTD_CMAKE_PCH_QUANTD_PCH_H_
#define QUANTD_CMAKE_PCH_QUANTD_PCH_H_

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/message.h"

#endif  // QUANTD_CMAKE_PCH_QUANTD_PCH_H_
