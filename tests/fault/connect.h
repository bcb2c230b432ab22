// A C++ client of a test's quantd, for the fault tests of one binary.
#ifndef QUANTD_TESTS_FAULT_CONNECT_H_
#define QUANTD_TESTS_FAULT_CONNECT_H_

#include <memory>

#include "clients/cpp/client.h"
#include "gtest/gtest.h"
#include "tests/integration/server_process.h"

namespace quantd::testing {

// A client of `server`, or nullptr (with a failed expectation).
inline std::unique_ptr<client::Client> Connect(const ServerProcess& server) {
  auto c = client::Client::Create({.target = server.target()});
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

}  // namespace quantd::testing

#endif  // QUANTD_TESTS_FAULT_CONNECT_H_
