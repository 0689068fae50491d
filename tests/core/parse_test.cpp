// Strict number parsing (ember/core/parse.h): whole-text matches only, ranges checked, and
// errors that name the option and quote what was given.
#include "ember/core/parse.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace ember {
namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "(no ValueError)";
}

TEST(Parse, IntegersMatchTheWholeText) {
  EXPECT_EQ(to_int("0"), 0);
  EXPECT_EQ(to_int("42"), 42);
  EXPECT_EQ(to_int("-7"), -7);
  EXPECT_EQ(to_int("9223372036854775807"), INT64_MAX);
  for (const char* bad : {"", " 1", "1 ", "+1", "1x", "0x10", "1.9", "1e3", "abc", "--1",
                          "9223372036854775808", "-9223372036854775809"})
    EXPECT_EQ(to_int(bad), std::nullopt) << bad;
}

TEST(Parse, NumbersAreFiniteAndWhole) {
  EXPECT_EQ(to_double("0.5"), 0.5);
  EXPECT_EQ(to_double("1e-3"), 1e-3);
  EXPECT_EQ(to_double("-2"), -2.0);
  for (const char* bad :
       {"", "inf", "nan", "-inf", "1e999", " 1", "1 ", "+1", "0.5x", "1,5", "0x1p3"})
    EXPECT_EQ(to_double(bad), std::nullopt) << bad;
}

TEST(Parse, ErrorsNameTheOptionAndTheRange) {
  EXPECT_EQ(parse_int("3", "--epochs", 1), 3);
  EXPECT_EQ(message_of([] { parse_int("1.9", "--epochs", 1); }),
            "--epochs: expected a positive integer, got \"1.9\"");
  EXPECT_EQ(message_of([] { parse_int("0", "--epochs", 1); }),
            "--epochs: expected a positive integer, got \"0\"");
  EXPECT_EQ(message_of([] { parse_int("-1", "--workers", 0); }),
            "--workers: expected a non-negative integer, got \"-1\"");
  EXPECT_EQ(message_of([] { parse_int("0x10", "test:0x10", 0, 9999); }),
            "test:0x10: expected an integer from 0 to 9999, got \"0x10\"");
  EXPECT_EQ(message_of([] { parse_int("10000", "index", 0, 9999); }),
            "index: expected an integer from 0 to 9999, got \"10000\"");
  EXPECT_EQ(message_of([] { parse_int("x", "n"); }), "n: expected an integer, got \"x\"");
  EXPECT_EQ(message_of([] { parse_int("", "n", 5); }), "n: expected an integer >= 5, got \"\"");
  EXPECT_EQ(message_of([] { parse_int("a\nb", "n"); }), "n: expected an integer, got \"a\\x0ab\"");

  EXPECT_EQ(parse_double("0.001", "--lr", NumberSign::Positive), 0.001);
  EXPECT_EQ(message_of([] { parse_double("0", "--lr", NumberSign::Positive); }),
            "--lr: expected a positive number, got \"0\"");
  EXPECT_EQ(message_of([] { parse_double("nan", "--lr", NumberSign::Positive); }),
            "--lr: expected a positive number, got \"nan\"");
  EXPECT_EQ(message_of([] { parse_double("-1", "--x", NumberSign::NonNegative); }),
            "--x: expected a non-negative number, got \"-1\"");
  EXPECT_EQ(message_of([] { parse_double("1.5.2", "--x"); }),
            "--x: expected a number, got \"1.5.2\"");
}

}  // namespace
}  // namespace ember
