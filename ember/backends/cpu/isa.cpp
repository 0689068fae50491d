#include "ember/backends/cpu/isa.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ember/core/error.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#endif
#if defined(__unix__)
#include <unistd.h>
#endif

namespace ember::cpu {

namespace {

// AVX-512 BF16 (CPUID leaf 7, sub-leaf 1: EAX bit 5).
bool avx512_bf16() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5));
#else
  return false;
#endif
}

// AMX tiles with bf16 products, their state enabled by the OS (XCR0) and this process allowed
// to use it: Linux hands the 8 KiB of tile data only to processes that ask (arch_prctl), and
// an AMX instruction without that permission is a fatal signal.
bool amx_usable() {
#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool tile = d & (1u << 24), bf16 = d & (1u << 22);
  if (!tile || !bf16) return false;
  __cpuid(1, a, b, c, d);
  if (!(c & (1u << 27))) return false;  // OSXSAVE: xgetbv is there
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 0x60000u) != 0x60000u) return false;  // XTILECFG and XTILEDATA state
  constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

CpuIsa detect() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
    return !avx512_bf16() ? CpuIsa::Avx512 : amx_usable() ? CpuIsa::Amx : CpuIsa::Avx512Bf16;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuIsa::Avx2;
#endif
  return CpuIsa::Portable;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && defined(EMBER_X86_BASELINE)
// The library is compiled for x86-64-vN (EMBER_X86_LEVEL) and this file for plain x86-64 (its
// COMPILE_OPTIONS), so this check runs on any x86-64 CPU, before the program's other
// constructors (priority 101): a CPU without the baseline's instructions gets this message
// instead of dying on an illegal instruction somewhere later.
__attribute__((constructor(101))) void check_baseline() {
  __builtin_cpu_init();
  bool ok = __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("sse4.2");
  if (EMBER_X86_BASELINE >= 3)
    ok = ok && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("bmi2");
  if (EMBER_X86_BASELINE >= 4)
    ok = ok && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (ok) return;
  std::fprintf(stderr,
               "ember: this build needs an x86-64-v%d CPU, and this one lacks some of its "
               "instructions; build ember with a lower -DEMBER_X86_LEVEL (x86-64-v2, x86-64) "
               "for it\n",
               EMBER_X86_BASELINE);
  std::_Exit(70);
}
#endif

// -1: no cap set by the program (EMBER_CPU_ISA's, if any, applies).
std::atomic<int> g_cap{-1};

CpuIsa env_cap() {
  static const CpuIsa cap = [] {
    const char* e = std::getenv("EMBER_CPU_ISA");
    if (!e || !*e) return CpuIsa::Amx;
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

bool cpu_has_avx512_vnni() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool vnni = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vnni") != 0;
  }();
  return vnni && cpu_isa() >= CpuIsa::Avx512;
#else
  return false;
#endif
}

bool cpu_has_amx_int8() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool int8 = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d & (1u << 25));  // AMX-INT8
  }();
  return int8 && cpu_isa() >= CpuIsa::Amx;
#else
  return false;
#endif
}

void set_cpu_isa_cap(std::optional<CpuIsa> cap) {
  g_cap.store(cap ? static_cast<int>(*cap) : -1, std::memory_order_relaxed);
}

namespace {
std::atomic<int64_t> g_l2_override{0};  // 0: none
}  // namespace

int64_t cpu_l2_bytes() {
  static const int64_t bytes = [] {
#if defined(_SC_LEVEL2_CACHE_SIZE)
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (l2 > 0) return int64_t{l2};
#endif
    return int64_t{1} << 20;
  }();
  const int64_t o = g_l2_override.load(std::memory_order_relaxed);
  return o > 0 ? o : bytes;
}

void set_cpu_l2_bytes(std::optional<int64_t> bytes) {
  g_l2_override.store(bytes ? std::max<int64_t>(*bytes, 1) : 0, std::memory_order_relaxed);
}

std::string_view name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Avx2:
      return "avx2";
    case CpuIsa::Avx512:
      return "avx512";
    case CpuIsa::Avx512Bf16:
      return "avx512_bf16";
    case CpuIsa::Amx:
      return "amx";
    default:
      return "portable";
  }
}

CpuIsa parse_cpu_isa(std::string_view s) {
  for (CpuIsa i : {CpuIsa::Portable, CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Avx512Bf16, CpuIsa::Amx})
    if (s == name(i)) return i;
  throw ValueError("[cpu] unknown instruction set '" + std::string(s) +
                   "' (EMBER_CPU_ISA: portable, avx2, avx512, avx512_bf16 or amx)");
}

}  // namespace ember::cpu
