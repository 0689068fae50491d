// The data tests' check that a call throws an error of a type whose message names the cause:
//
//   EXPECT_MESSAGE(read_csv(path), ValueError, "line 3");
#pragma once
#include <gtest/gtest.h>

#include <exception>
#include <string>

namespace ember::test {

/// What f throws, as its message; "" when it returns.
inline std::string message_of(auto&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace ember::test

#define EXPECT_MESSAGE(stmt, type, part)                                  \
  do {                                                                    \
    EXPECT_THROW(stmt, type);                                             \
    std::string msg_ = ::ember::test::message_of([&] { stmt; });          \
    EXPECT_NE(msg_.find(part), std::string::npos) << "message: " << msg_; \
  } while (0)
