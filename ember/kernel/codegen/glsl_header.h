// Internal to the GLSL renderer: what a kernel needs from GLSL before its body is written: the
// header (version, extensions, execution modes, workgroup size), the buffers read and written
// through a u32 view (atomics GLSL lacks), the shared arrays declared as 4-vectors, and where
// each argument goes in the argument buffer (glsl_layout, glsl.h).
#pragma once
#include <string>
#include <vector>

#include "ember/kernel/codegen/glsl.h"
#include "ember/kernel/ir.h"

namespace ember::kernel::glsl {

[[noreturn]] void cannot(const Kernel& k, const std::string& what);

/// The type of every value of `k`, by value id.
std::vector<Type> value_types(const Kernel& k);
/// Per buffer parameter: 1 where its atomics are compare-and-swap loops on a u32 view (those
/// GLSL lacks for its type); ValueError for atomics no view gives.
std::vector<char> u32_views(const Kernel& k);
/// Per shared array: 1 where it holds 32-bit elements only ever accessed 4 at a time, declared
/// as an array of 4-vectors (one 16-byte access each; a compiler may not prove a scalar array's
/// alignment).
std::vector<char> vec4_shared(const Kernel& k, const std::vector<Type>& types);
/// Per shared array: 1 where cooperative matrices are read or written there (declared with
/// its elements' real type, f16 as float16_t, which the fragments' loads need).
std::vector<char> fragment_shared(const Kernel& k);
/// The GLSL type of each fragment (GL_NV_cooperative_matrix, its dimensions the
/// specialization constants of its type: glsl.h's kFragmentSpecIds).
std::vector<std::string> fragment_types_glsl(const Kernel& k);
/// The 4-vector GLSL type of a 32-bit register type.
std::string vec4_of(ScalarType s);

/// What the math prelude must include.
struct Needs {
  bool f64 = false, i64 = false;
};
/// The shader's first lines, up to its workgroup size; `needs` gets what the prelude needs.
std::string header(const Kernel& k, const std::vector<Type>& types, const std::vector<char>& alias,
                   const GlslOptions& o, Needs& needs);

}  // namespace ember::kernel::glsl
