// Internal to the GLSL renderer: the math library every rendered kernel carries (ember's own
// erf, expm1, log1p, pow with C's special cases, NaN-propagating min/max, f16/bf16 rounding,
// fmod, and every f64 function, which GLSL lacks) and the function each math instruction
// becomes for a register type (f16/bf16 compute in f32).
#pragma once
#include <cstdint>
#include <string>

#include "ember/kernel/ir.h"

namespace ember::kernel::glsl {

/// The helpers' GLSL source: those for f32/i32/u32, then for f64 and i64 where asked (so a
/// kernel without them needs neither capability); `exact_fma`: the device's f32 fma rounds once
/// (GlslOptions), which division's correction uses.
std::string prelude(bool f64, bool i64, bool exact_fma);
/// The type a value of `s` lives in (f16/bf16: float; 8/16-bit ints: int or uint).
std::string reg(ScalarType s);
/// The type an element of `s` is stored as in a buffer (bool: uint8_t, f16/bf16: bits).
std::string storage(ScalarType s);
/// The type a scalar parameter of `s` is passed as in the argument buffer.
ScalarType passed_as(ScalarType s);
/// `x`, a register value of `s`, made a valid value of `s` again (rounded, narrowed).
std::string fix(ScalarType s, const std::string& x);
/// Zero, a float literal and an integer literal of `s`, as GLSL source.
std::string zero(ScalarType s);
std::string float_literal(double v, ScalarType s);
std::string int_literal(int64_t v, ScalarType s);
/// The GLSL function `op` (a Math or Math2 instruction) calls for values of `type`.
const char* math_function(Op op, ScalarType type);

}  // namespace ember::kernel::glsl
