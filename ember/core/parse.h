// Strict number parsing for command lines and small text fields: the whole text must be one
// decimal number (no spaces, no '+', no "0x", nothing after it), and it is checked for range.
// Errors name what was being read:
//
//   int64_t n = ember::parse_int(argv[i], "--epochs", 1);  // "1.9" throws ValueError
//       // --epochs: expected a positive integer, got "1.9"
//   double lr = ember::parse_double(argv[i], "--lr", ember::NumberSign::Positive);
//   std::optional<int64_t> k = ember::to_int("12");       // nullopt instead of throwing
#pragma once
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "ember/core/error.h"

namespace ember {

/// The whole of `text` as a decimal integer; nullopt for anything else (including overflow).
inline std::optional<int64_t> to_int(std::string_view text) {
  int64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size())
    return std::nullopt;
  return v;
}

/// The whole of `text` as a finite decimal number ("1e-3" and "0.5" are, "inf", "nan", "0x1p3"
/// and ".5 " are not).
inline std::optional<double> to_double(std::string_view text) {
  double v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size() ||
      !std::isfinite(v))
    return std::nullopt;
  return v;
}

namespace detail {
inline std::string quote_for_error(std::string_view text) {
  std::string s = "\"";
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == '"' || c == '\\') {
      const char* hex = "0123456789abcdef";
      s += "\\x";
      s += hex[(static_cast<unsigned char>(c) >> 4) & 0xF];
      s += hex[static_cast<unsigned char>(c) & 0xF];
    } else {
      s += c;
    }
  }
  return s + "\"";
}

inline std::string int_range_text(int64_t min, int64_t max) {
  constexpr int64_t lo = std::numeric_limits<int64_t>::min();
  constexpr int64_t hi = std::numeric_limits<int64_t>::max();
  if (max == hi) {
    if (min == 1) return "a positive integer";
    if (min == 0) return "a non-negative integer";
    if (min == lo) return "an integer";
    return "an integer >= " + std::to_string(min);
  }
  if (min == lo) return "an integer <= " + std::to_string(max);
  return "an integer from " + std::to_string(min) + " to " + std::to_string(max);
}
}  // namespace detail

/// `text` as an integer in [min, max]; otherwise a ValueError
/// `<what>: expected a positive integer, got "1.9"` (the range worded from min and max).
inline int64_t parse_int(std::string_view text, std::string_view what,
                         int64_t min = std::numeric_limits<int64_t>::min(),
                         int64_t max = std::numeric_limits<int64_t>::max()) {
  const auto v = to_int(text);
  if (!v || *v < min || *v > max)
    throw ValueError(std::string(what) + ": expected " + detail::int_range_text(min, max) +
                     ", got " + detail::quote_for_error(text));
  return *v;
}

enum class NumberSign { Any, NonNegative, Positive };

/// `text` as a finite number of the given sign; otherwise a ValueError
/// `<what>: expected a positive number, got "abc"`.
inline double parse_double(std::string_view text, std::string_view what,
                           NumberSign sign = NumberSign::Any) {
  const auto v = to_double(text);
  const bool ok = v && (sign == NumberSign::Any || (sign == NumberSign::Positive && *v > 0) ||
                        (sign == NumberSign::NonNegative && *v >= 0));
  if (!ok)
    throw ValueError(std::string(what) + ": expected " +
                     (sign == NumberSign::Positive      ? "a positive number"
                      : sign == NumberSign::NonNegative ? "a non-negative number"
                                                        : "a number") +
                     ", got " + detail::quote_for_error(text));
  return *v;
}

}  // namespace ember
