// Element conversion between ember's element types, defined for every input: float to int
// truncates toward zero, saturates at the int range and maps NaN to 0 (where C++ leaves it
// undefined); anything to bool is `x != 0`.
#pragma once
#include <cmath>
#include <limits>
#include <type_traits>

#include "ember/core/half.h"

namespace ember {

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, f16> || std::is_same_v<T, bf16>;

/// The type arithmetic on T is done in: float for f16/bf16, T otherwise.
template <class T>
using compute_t = std::conditional_t<is_half_v<T>, float, T>;

template <class Dst, class Src>
inline Dst cast_value(Src v) {
  if constexpr (std::is_same_v<Dst, Src>) {
    return v;
  } else if constexpr (is_half_v<Src>) {
    return cast_value<Dst>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<Dst, bool>) {
    return v != Src{};
  } else if constexpr (is_half_v<Dst>) {
    return Dst(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<Src> && std::is_integral_v<Dst>) {
    if (std::isnan(v)) return Dst{0};
    constexpr auto lo = static_cast<Src>(std::numeric_limits<Dst>::min());
    constexpr auto hi = static_cast<Src>(std::numeric_limits<Dst>::max());
    if (v <= lo) return std::numeric_limits<Dst>::min();
    if (v >= hi) return std::numeric_limits<Dst>::max();
    return static_cast<Dst>(v);
  } else {
    return static_cast<Dst>(v);
  }
}

}  // namespace ember
