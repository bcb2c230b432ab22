// Shared helpers for the TPC tests.
#ifndef QUANTD_TESTS_CORE_TPC_TPC_TEST_UTIL_H_
#define QUANTD_TESTS_CORE_TPC_TPC_TEST_UTIL_H_

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "google/protobuf/util/message_differencer.h"
#include "quantd/v1/tpc.pb.h"

namespace quantd::tpc::testing {

inline std::string FixturePath(const std::string& file) {
  const char* root = std::getenv("QUANTD_SOURCE_DIR");
  return std::string(root ? root : ".") + "/../shared/fixtures/mct-tpc/" + file;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Empty when equal; otherwise a field-level report of the differences.
inline std::string ProtoDiff(const google::protobuf::Message& a,
                             const google::protobuf::Message& b) {
  google::protobuf::util::MessageDifferencer d;
  std::string report;
  d.ReportDifferencesToString(&report);
  if (d.Compare(a, b)) return "";
  return report.substr(0, 4000);
}

}  // namespace quantd::tpc::testing

#endif  // QUANTD_TESTS_CORE_TPC_TPC_TEST_UTIL_H_
