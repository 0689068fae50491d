#include "board.h"

#include <cstring>

extern "C" char __heap_start[];  // picolibc.ld: the end of .bss
extern "C" char __stack[];       // picolibc.ld: the top of the stack

namespace board {
namespace {

constexpr uint32_t kPaint = 0xA5A5A5A5u;
constexpr uint32_t kReload = 0xFFFFFFu;  // SysTick is 24 bits
volatile uint32_t* const kSysTick = reinterpret_cast<volatile uint32_t*>(0xE000E010u);
uint32_t g_start = 0;
uint32_t g_insns_per_256_ticks = 0;

uint32_t now() { return kSysTick[2]; }  // CVR counts down
uint32_t ticks_since(uint32_t t0) { return (t0 - now()) & kReload; }

}  // namespace

void init() {
  kSysTick[0] = 0;        // CSR: off
  kSysTick[1] = kReload;  // RVR
  kSysTick[2] = 0;        // CVR: any write clears it
  kSysTick[0] = 5;        // on, processor clock, no interrupt
  // A loop of 2 instructions per turn (subs, bne): its ticks give the instructions per tick.
  const uint32_t turns = 1u << 20;
  uint32_t n = turns;
  const uint32_t t0 = now();
  __asm__ volatile("1: subs %0, %0, #1\n bne 1b" : "+r"(n));
  const uint32_t ticks = ticks_since(t0);
  g_insns_per_256_ticks = ticks ? static_cast<uint32_t>(2ull * turns * 256 / ticks) : 0;
}

void paint_stack() {
  char* sp;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  for (uint32_t* p = reinterpret_cast<uint32_t*>(__heap_start);
       reinterpret_cast<char*>(p + 1) < sp - 64; ++p)
    *p = kPaint;
}

uint32_t stack_high_water() {
  const uint32_t* p = reinterpret_cast<const uint32_t*>(__heap_start);
  while (reinterpret_cast<const char*>(p) < __stack && *p == kPaint) ++p;
  return static_cast<uint32_t>(__stack - reinterpret_cast<const char*>(p));
}

void start() { g_start = now(); }

uint32_t instructions() {
  return static_cast<uint32_t>(uint64_t{ticks_since(g_start)} * g_insns_per_256_ticks / 256);
}

void print_floats(const char* label, int index, const float* v, int n) {
  printf("%s %d", label, index);
  for (int i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &v[i], sizeof bits);
    printf(" %08lx", static_cast<unsigned long>(bits));
  }
  printf("\n");
}

}  // namespace board
