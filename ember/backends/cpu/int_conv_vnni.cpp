// int_conv's direct kernel on AVX-512 VNNI: stride 1, a u8 or i8 input and an i8 weight (the
// activations and weights of dynamic and static quantization). The input of an image is interleaved
// once into [C/4][padded plane][4 channels] bytes (wide.h's layout: zero padding around each plane,
// the outputs at its pitch; channels padded with zeros to a multiple of 4), so that one step of k
// (four input channels of one tap) for 32 consecutive wide positions is 128 contiguous bytes,
// read in place. The weight is packed as the int8 GEMM's A panels in the same order of k (tap,
// then channel quad). A tile of 12 output channels x 32 positions stays in 24 registers, each
// step two loads of the input, 12 broadcasts of the weight and 24 VPDPBUSD (the input the
// unsigned operand, the weight the signed one). An i8 input is stored with its top bit flipped
// (x + 128 as u8; the padding 128 too), and each output channel's sums start at -128 times the
// sum of its weights, which takes the 128s back out exactly. Where the GEMM path
// builds a column matrix (the input nine times over for 3x3) and packs it again into panels,
// this reads the input once more than the convolution itself does.
#include <algorithm>
#include <cstring>

#include "ember/backends/cpu/int_conv.h"
#include "ember/backends/cpu/isa.h"
#include "ember/backends/cpu/spatial.h"
#include "ember/backends/cpu/vnni.h"
#include "ember/core/thread_pool.h"

namespace ember::cpu {

#if defined(EMBER_HAVE_VNNI_KERNELS)

namespace {

constexpr int64_t kRows = 12;  // output channels of a tile
constexpr int64_t kCols = 32;  // wide positions of a tile (two registers of 16 i32)

// C tile (R x kCols, rows ldc apart) = row[i] + the sum over taps t and channel quads q of the
// packed weight steps (ap: [taps][quads][kRows][4]) times the input's 128 bytes at xb + toff[t] + q
// * quad_bytes.
template <int R>
EMBER_TARGET_VNNI void conv_tile(int64_t taps, int64_t quads, const uint8_t* ap, const uint8_t* xb,
                                 const int64_t* toff, int64_t quad_bytes, const int32_t* row,
                                 int32_t* c, int64_t ldc) {
  constexpr bool kSwap = true;  // the input (B) is VPDPBUSD's unsigned operand
#define EMBER_CONV_DECL(i) __m512i c##i##0 = _mm512_set1_epi32(row[(i) % R]), c##i##1 = c##i##0;
  EMBER_VNNI_ROWS(EMBER_CONV_DECL)
#undef EMBER_CONV_DECL
  for (int64_t t = 0; t < taps; ++t) {
    const uint8_t* bp = xb + toff[t];
#pragma GCC unroll 2
    for (int64_t q = 0; q < quads; ++q) {
      const __m512i b0 = _mm512_loadu_si512(bp), b1 = _mm512_loadu_si512(bp + 64);
      EMBER_VNNI_ROWS(EMBER_VNNI_TILE_STEP)
      ap += kRows * 4;
      bp += quad_bytes;
    }
  }
  EMBER_VNNI_ROWS(EMBER_VNNI_TILE_STORE)
}

// Sixteen bytes of each of four channel rows (a missing channel: null, read as zeros), each
// xor'ed with `flip`, as 16 positions of four bytes at dst (SSE2).
void interleave16(const uint8_t* const rows[4], __m128i flip, uint8_t* dst) {
  __m128i r[4];
  for (int e = 0; e < 4; ++e)
    r[e] = _mm_xor_si128(
        rows[e] ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[e])) : _mm_setzero_si128(),
        flip);
  const __m128i lo01 = _mm_unpacklo_epi8(r[0], r[1]), hi01 = _mm_unpackhi_epi8(r[0], r[1]);
  const __m128i lo23 = _mm_unpacklo_epi8(r[2], r[3]), hi23 = _mm_unpackhi_epi8(r[2], r[3]);
  auto* out = reinterpret_cast<__m128i*>(dst);
  _mm_storeu_si128(out, _mm_unpacklo_epi16(lo01, lo23));
  _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(lo01, lo23));
  _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(hi01, hi23));
  _mm_storeu_si128(out + 3, _mm_unpackhi_epi16(hi01, hi23));
}

}  // namespace

bool int_conv_direct_fits(const Geom& g, DType x, DType w) {
  return (x == DType::U8 || x == DType::I8) && w == DType::I8 && Wide::fits(g) &&
         cpu_has_avx512_vnni();
}

IntConvDirect::IntConvDirect(const Geom& g, const uint8_t* w, int64_t cg, int64_t cog,
                             bool x_signed)
    : g_(g),
      wl_(g),
      cg_(cg),
      cog_(cog),
      taps_(g.k_numel()),
      quads_((cg + 3) / 4),
      flip_(x_signed ? 0x80 : 0) {
  const int64_t panels = (cog + kRows - 1) / kRows, steps = taps_ * quads_;
  weights_.assign(static_cast<size_t>(panels * steps * kRows * 4), 0);
  for (int64_t o = 0; o < cog; ++o)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t t = 0; t < taps_; ++t) {
        const int64_t step = t * quads_ + c / 4;
        weights_[static_cast<size_t>(((o / kRows * steps + step) * kRows + o % kRows) * 4 +
                                     c % 4)] = w[(o * cg + c) * taps_ + t];
      }
  // an i8 input's 128s out: -128 times each output channel's weight sum (modulo 2^32)
  row_.assign(static_cast<size_t>(round_up_to(cog, kRows)), 0);
  if (flip_)
    for (int64_t o = 0; o < cog; ++o) {
      uint32_t sum = 0;
      for (int64_t i = 0; i < cg * taps_; ++i)
        sum += static_cast<uint32_t>(int32_t(static_cast<int8_t>(w[o * cg * taps_ + i])));
      row_[static_cast<size_t>(o)] = static_cast<int32_t>(0u - 128u * sum);
    }
  const int64_t plane = wl_.plane();
  for (int64_t t = 0; t < taps_; ++t) toff_.push_back(wl_.off[static_cast<size_t>(t)] * 4);
  quad_bytes_ = plane * 4;
  // every tile whole: positions up to the tiles' end read past the last real one
  tiles_ = (wl_.wide + kCols - 1) / kCols;
  const int64_t reach = tiles_ * kCols + *std::max_element(wl_.off.begin(), wl_.off.end());
  input_bytes_ = (quads_ - 1) * quad_bytes_ + std::max(plane, reach) * 4;
  out_ld_ = tiles_ * kCols;
}

int64_t IntConvDirect::scratch_bytes() const {
  return input_bytes_ + round_up_to(cog_, 4) * out_ld_ * static_cast<int64_t>(sizeof(int32_t));
}

void IntConvDirect::run(const uint8_t* x, int32_t* y, std::byte* scratch, bool parallel) const {
  auto* in = reinterpret_cast<uint8_t*>(scratch);
  auto* out = reinterpret_cast<int32_t*>(scratch + input_bytes_);
  const int64_t lin = g_.in_numel();
  // the input, interleaved with its padding and missing channels zero
  std::memset(in, flip_, static_cast<size_t>(input_bytes_));  // zeros, as stored
  const __m128i flip = _mm_set1_epi8(static_cast<char>(flip_));
  const int64_t rows_in = g_.in[0] * g_.in[1], width = g_.in[2];
  const auto interleave = [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q)
      for (int64_t r = 0; r < rows_in; ++r) {
        const int64_t d = r / g_.in[1], h = r % g_.in[1];
        const uint8_t* src[4];
        for (int64_t e = 0; e < 4; ++e)
          src[e] = 4 * q + e < cg_ ? x + (4 * q + e) * lin + r * width : nullptr;
        uint8_t* dst = in + q * quad_bytes_ +
                       (((d + g_.p[0]) * wl_.pitch[1] + h + g_.p[1]) * wl_.pitch[2] + g_.p[2]) * 4;
        int64_t i = 0;
        for (; i + 16 <= width; i += 16) {
          const uint8_t* at[4];
          for (int e = 0; e < 4; ++e) at[e] = src[e] ? src[e] + i : nullptr;
          interleave16(at, flip, dst + i * 4);
        }
        for (; i < width; ++i)
          for (int64_t e = 0; e < 4; ++e) dst[i * 4 + e] = (src[e] ? src[e][i] : 0) ^ flip_;
      }
  };
  // the tiles: a run of positions against every panel of output channels
  const int64_t panels = (cog_ + kRows - 1) / kRows, steps = taps_ * quads_;
  const auto tiles = [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j)
      for (int64_t p = 0; p < panels; ++p) {
        const int64_t rows = std::min(kRows, cog_ - p * kRows);
        const uint8_t* ap = weights_.data() + p * steps * kRows * 4;
        const uint8_t* xb = in + j * kCols * 4;
        const int32_t* row = row_.data() + p * kRows;
        int32_t* c = out + p * kRows * out_ld_ + j * kCols;
        if (rows > 8)
          conv_tile<12>(taps_, quads_, ap, xb, toff_.data(), quad_bytes_, row, c, out_ld_);
        else if (rows > 4)
          conv_tile<8>(taps_, quads_, ap, xb, toff_.data(), quad_bytes_, row, c, out_ld_);
        else
          conv_tile<4>(taps_, quads_, ap, xb, toff_.data(), quad_bytes_, row, c, out_ld_);
      }
  };
  if (parallel) {
    parallel_for(quads_, 1, interleave);
    parallel_for(tiles_, 1, tiles);
  } else {
    interleave(0, quads_);
    tiles(0, tiles_);
  }
  for (int64_t o = 0; o < cog_; ++o) wl_.narrow(g_, out + o * out_ld_, y + o * g_.out_numel());
}

#else

bool int_conv_direct_fits(const Geom&, DType, DType) { return false; }
IntConvDirect::IntConvDirect(const Geom& g, const uint8_t*, int64_t, int64_t, bool)
    : g_(g), wl_(g) {}
int64_t IntConvDirect::scratch_bytes() const { return 0; }
void IntConvDirect::run(const uint8_t*, int32_t*, std::byte*, bool) const {}

#endif

}  // namespace ember::cpu
