// What the embedded examples measure and print, the same on every board: the instructions an
// inference takes (SysTick under `qemu -icount shift=0`, calibrated against a loop of known
// length), the stack's high-water mark (the free stack is painted first) and float values as
// their exact bits, read back by check.py. Output goes through semihosting (printf).
#pragma once
#include <cstdint>
#include <cstdio>

namespace board {

/// Starts SysTick and measures the instructions per tick; call first in main().
void init();
/// Fills the unused stack with a pattern, for stack_high_water().
void paint_stack();
/// The deepest the stack has reached since paint_stack(), in bytes.
uint32_t stack_high_water();

/// Instructions executed since the last `start()` (SysTick ticks times the calibration).
void start();
uint32_t instructions();

/// Prints `label index v0 v1 ...` with each float as its 8 hex digits.
void print_floats(const char* label, int index, const float* v, int n);

}  // namespace board
