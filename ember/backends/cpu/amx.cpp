// AMX tile configuration, shared by the bf16 and the 8-bit GEMMs (gemm.h): every kernel there
// uses all eight tiles as 16 rows of 64 bytes.
#include "ember/backends/cpu/gemm.h"

namespace ember::cpu {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

namespace {
// The tile shapes, set per thread (ldtilecfg) before its first tile instruction. Loaded from
// memory the compiler cannot see into, so written with a memory operand of all 64 bytes (GCC 12
// dropped part of the zeroing before _tile_loadconfig).
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
}  // namespace

__attribute__((target("amx-tile"))) void amx_load_tile_config() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
}

__attribute__((target("amx-tile"))) void amx_release_tiles() { __asm__ volatile("tilerelease"); }

#else

void amx_load_tile_config() {}
void amx_release_tiles() {}

#endif

}  // namespace ember::cpu
