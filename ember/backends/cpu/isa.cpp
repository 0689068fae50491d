#include "ember/backends/cpu/isa.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "ember/core/error.h"

namespace ember::cpu {

namespace {

CpuIsa detect() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
    return CpuIsa::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuIsa::Avx2;
#endif
  return CpuIsa::Portable;
}

// -1: no cap set by the program (EMBER_CPU_ISA's, if any, applies).
std::atomic<int> g_cap{-1};

CpuIsa env_cap() {
  static const CpuIsa cap = [] {
    const char* e = std::getenv("EMBER_CPU_ISA");
    if (!e || !*e) return CpuIsa::Avx512;
    try {
      return parse_cpu_isa(e);
    } catch (const ValueError&) {
      return CpuIsa::Portable;  // an unknown name: the safe choice
    }
  }();
  return cap;
}

}  // namespace

CpuIsa cpu_isa_available() {
  static const CpuIsa isa = detect();
  return isa;
}

CpuIsa cpu_isa() {
  int set = g_cap.load(std::memory_order_relaxed);
  CpuIsa cap = set >= 0 ? static_cast<CpuIsa>(set) : env_cap();
  CpuIsa have = cpu_isa_available();
  return have < cap ? have : cap;
}

void set_cpu_isa_cap(std::optional<CpuIsa> cap) {
  g_cap.store(cap ? static_cast<int>(*cap) : -1, std::memory_order_relaxed);
}

std::string_view name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Avx2:
      return "avx2";
    case CpuIsa::Avx512:
      return "avx512";
    default:
      return "portable";
  }
}

CpuIsa parse_cpu_isa(std::string_view s) {
  for (CpuIsa i : {CpuIsa::Portable, CpuIsa::Avx2, CpuIsa::Avx512})
    if (s == name(i)) return i;
  throw ValueError("[cpu] unknown instruction set '" + std::string(s) +
                   "' (EMBER_CPU_ISA: portable, avx2 or avx512)");
}

}  // namespace ember::cpu
