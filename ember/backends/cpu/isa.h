// The CPU's vector instruction sets, for kernels compiled for several of them and chosen at run
// time (the GEMM's micro-kernels: docs/cpu.md). The highest level the CPU has is used, capped
// by EMBER_CPU_ISA (portable, avx2, avx512, avx512_bf16, amx; read once) or set_cpu_isa_cap, so a
// binary runs everywhere and each variant can be tested on a machine that has the highest.
//
//   ember::cpu::CpuIsa isa = ember::cpu::cpu_isa();          // e.g. CpuIsa::Avx512
//   ember::cpu::set_cpu_isa_cap(ember::cpu::CpuIsa::Avx2);   // the AVX2 kernels from now on
//   ember::cpu::set_cpu_isa_cap(std::nullopt);                // back to EMBER_CPU_ISA / none
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "ember/core/export.h"

/// Marks a function compiled for AVX2 and FMA in a file built for a lower baseline; call it only
/// where cpu_isa() is CpuIsa::Avx2 or above.
///   EMBER_TARGET_AVX2 void add8(const float* a, float* b);
#if defined(__x86_64__)
#define EMBER_TARGET_AVX2 __attribute__((target("avx2,fma")))
#endif

namespace ember::cpu {

/// Ordered: each level has what the ones before it have.
enum class CpuIsa {
  Portable,    // what the library was compiled for (no run-time-selected instructions)
  Avx2,        // AVX2 and FMA (x86-64-v3)
  Avx512,      // AVX-512 F, VL, BW, DQ (x86-64-v4)
  Avx512Bf16,  // and AVX-512 BF16 dot products (Cooper Lake, Sapphire Rapids, AMD Zen 4 on)
  Amx,         // and AMX tiles with bf16 products (Sapphire Rapids on), the OS letting this
               // process use them (Linux 5.16 on)
};

/// The level the CPU has, below the cap (EMBER_CPU_ISA or set_cpu_isa_cap).
EMBER_API CpuIsa cpu_isa();
/// The level the CPU has, regardless of any cap.
EMBER_API CpuIsa cpu_isa_available();
/// Whether the CPU has AVX-512 VNNI's byte dot products (Cascade Lake, Ice Lake, Sapphire Rapids,
/// AMD Zen 4 on) and cpu_isa() is CpuIsa::Avx512 or above, so that a cap below AVX-512 turns
/// them off with the other AVX-512 kernels (the 8-bit integer GEMM, gemm_int8).
EMBER_API bool cpu_has_avx512_vnni();
/// Whether the CPU has AMX's int8 tile products (TDPBSSD and its kin: Sapphire Rapids on) and
/// cpu_isa() is CpuIsa::Amx (the tiles usable by this process, no cap below).
EMBER_API bool cpu_has_amx_int8();
/// Caps the level kernels are chosen at (nullopt: EMBER_CPU_ISA's cap, or none).
EMBER_API void set_cpu_isa_cap(std::optional<CpuIsa> cap);
/// One core's L2 cache in bytes (asked once; 1 MiB where the system does not say), for
/// blockings that keep a packed operand there; set_cpu_l2_bytes overrides it (nullopt: back to
/// the machine's), so tests reach every blocking on any machine.
EMBER_API int64_t cpu_l2_bytes();
EMBER_API void set_cpu_l2_bytes(std::optional<int64_t> bytes);
/// "portable", "avx2", "avx512", "avx512_bf16", "amx".
EMBER_API std::string_view name(CpuIsa isa);
/// The level named `s` (ValueError for other names).
EMBER_API CpuIsa parse_cpu_isa(std::string_view s);

}  // namespace ember::cpu
