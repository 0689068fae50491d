// int_conv: the convolution of 8-bit integers with i32 sums (ONNX's ConvInteger and QLinearConv
// run on it). On AVX-512 VNNI: stride 1 with an i8 weight, the direct kernel
// (int_conv_vnni.cpp); otherwise the int8 GEMM (gemm_int8.cpp) of the weight by the byte
// columns (a 1x1 window: the input itself; stride 1: the wide layout's runs, wide.h; else
// im2col's), small images side by side in one column matrix. Without VNNI the operands widened
// to f64, where every sum of a model's 8-bit products is exact, through the float convolution.
#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>

#include "ember/backends/cpu/gemm.h"
#include "ember/backends/cpu/int_conv.h"
#include "ember/backends/cpu/isa.h"
#include "ember/backends/cpu/spatial.h"
#include "ember/backends/cpu/strided.h"
#include "ember/backends/cpu/wide.h"

namespace ember::cpu {

namespace {

// The float convolution of the operands widened to T, as i32 (modulo 2^32 as the i32 sums
// wrap). Exact where every partial sum is an integer the type holds: always in f64 for a model's
// sizes; in f32 where the sums stay within 2^24 (int_conv below), and the float path multiplies
// and adds and never transforms (no Winograd: one input channel a group).
template <class T>
CpuTensor widened(const Op& op, Inputs in, const TensorMeta& out) {
  constexpr DType t = std::is_same_v<T, double> ? DType::F64 : DType::F32;
  std::array<CpuTensor, 2> wide{cast_to(in[0], t), cast_to(in[1], t)};
  const CpuTensor yw =
      spatial<T>(Op{OpCode::Conv, op.attrs}, Inputs(wide), TensorMeta{out.shape, t});
  CpuTensor o = empty(out);
  const T* s = yw.data<T>();
  int32_t* d = o.data<int32_t>();
  parallel_for(out.shape.numel(), kGrain, [&](int64_t b, int64_t e) {
    // whole numbers already: truncation is exact (f32's below 2^24 convert directly)
    for (int64_t i = b; i < e; ++i)
      if constexpr (std::is_same_v<T, float>)
        d[i] = static_cast<int32_t>(s[i]);
      else
        d[i] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(s[i])));
  });
  return o;
}

}  // namespace

CpuTensor int_conv(const Op& op, Inputs in, const TensorMeta& out) {
  const Shape& ws = in[1].meta.shape;
  // Depthwise (one input channel a group): the float path's depthwise loops in f32, exact where
  // the taps times the largest product stay within 2^24 (u8 x u8: 258 taps, u8 x i8: 514, i8 x
  // i8: 1024); the products by group had been a tile of one row each (8 x 64 x 56² 3x3 1.31 ->
  // 0.45 ms, 8 x 96 x 56² 5x5 stride 2 15.6 -> 0.72)
  const auto largest = [](DType t) { return int64_t{t == DType::U8 ? 255 : 128}; };
  const int64_t product = largest(in[0].meta.dtype) * largest(in[1].meta.dtype);
  if (ws[1] == 1 && ws.numel() / std::max<int64_t>(ws[0], 1) * product <= (int64_t{1} << 24))
    return widened<float>(op, in, out);
  if (!cpu_has_avx512_vnni()) return widened<double>(op, in, out);
  const CpuTensor x = contiguous(in[0]), w = contiguous(in[1]);
  CpuTensor o = empty(out);
  const Shape &xs = x.meta.shape, &ys = out.shape;
  const Window& win = op.attrs.window;
  const int64_t N = xs[0], c_in = xs[1], c_out = ys[1], G = win.groups;
  const int64_t cg = c_in / G, cog = c_out / G;
  const Geom g = make_geom(win, spatial_of(xs), spatial_of(ys));
  const int64_t L = g.out_numel(), Lin = g.in_numel(), ck = cg * g.k_numel();
  if (o.meta.shape.numel() == 0) return o;
  const uint8_t *X = x.data<uint8_t>(), *W = w.data<uint8_t>();
  int32_t* Y = o.data<int32_t>();
  const bool sx = x.meta.dtype == DType::I8, sw = w.meta.dtype == DType::I8;
  const auto weights = [&](int64_t grp) { return Int8Ref{W + grp * cog * ck, ck, 1, sw}; };
  if (!pointwise(g) && int_conv_direct_fits(g, x.meta.dtype, w.meta.dtype)) {
    std::vector<IntConvDirect> convs;
    for (int64_t grp = 0; grp < G; ++grp) convs.emplace_back(g, W + grp * cog * ck, cg, cog, sx);
    const int64_t bytes = convs[0].scratch_bytes();
    for_items(N * G, [&](int64_t it, bool par) {
      const int64_t n = it / G, grp = it % G;
      Scratch<std::byte> scratch(bytes);
      convs[static_cast<size_t>(grp)].run(X + (n * c_in + grp * cg) * Lin,
                                          Y + (n * c_out + grp * cog) * L, scratch.get(), par);
    });
    return o;
  }
  if (pointwise(g)) {  // the input planes are the columns
    for (int64_t n = 0; n < N; ++n)
      for (int64_t grp = 0; grp < G; ++grp)
        gemm_int8(cog, L, cg, weights(grp), Int8Ref{X + (n * c_in + grp * cg) * Lin, L, 1, sx},
                  Y + (n * c_out + grp * cog) * L, L);
    return o;
  }
  // The columns: with stride 1 in the wide layout (wide.h: each row one contiguous run of the
  // zero-padded plane, the outputs at its pitch, the positions past each output row computed and
  // dropped), else im2col's. Images side by side, about a thousand columns a product.
  const bool is_wide = Wide::fits(g);
  const Wide wl(g);
  const int64_t width = is_wide ? wl.wide : L, taps = g.k_numel();
  const int64_t nb = std::clamp<int64_t>((1024 + width - 1) / width, 1, N);
  Scratch<uint8_t> cols(ck * nb * width);
  Scratch<int32_t> sums(nb > 1 || is_wide ? cog * nb * width : 0);
  for (int64_t n0 = 0; n0 < N; n0 += nb) {
    const int64_t m = std::min(nb, N - n0), ld = m * width;
    for (int64_t grp = 0; grp < G; ++grp) {
      const auto image = [&](int64_t i) { return X + ((n0 + i) * c_in + grp * cg) * Lin; };
      if (is_wide) {  // a run per image, channel and tap
        parallel_for(
            m * cg, std::max<int64_t>(1, 4096 / std::max<int64_t>(width * taps, 1)),
            [&](int64_t b, int64_t e) {
              Scratch<uint8_t> pad(wl.padded ? wl.plane() : 0);
              for (int64_t it = b; it < e; ++it) {
                const int64_t i = it / cg, c = it % cg;
                const uint8_t* xp = padded_plane(wl, g, image(i) + c * Lin, pad.get(), it > b);
                for (int64_t t = 0; t < taps; ++t)
                  std::memcpy(cols.get() + (c * taps + t) * ld + i * width,
                              xp + wl.off[static_cast<size_t>(t)], static_cast<size_t>(width));
              }
            });
      } else {
        for (int64_t i = 0; i < m; ++i) im2col(image(i), cg, g, cols.get() + i * width, ld, true);
      }
      const Int8Ref b{cols.get(), ld, 1, sx};
      int32_t* y = Y + (n0 * c_out + grp * cog) * L;
      if (m == 1 && !is_wide) {
        gemm_int8(cog, L, ck, weights(grp), b, y, L);
        continue;
      }
      gemm_int8(cog, ld, ck, weights(grp), b, sums.get(), ld);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t r = 0; r < cog; ++r) {
          const int32_t* src = sums.get() + r * ld + i * width;
          int32_t* dst = y + (i * c_out + r) * L;
          if (is_wide)
            wl.narrow(g, src, dst);
          else
            std::memcpy(dst, src, static_cast<size_t>(L) * sizeof(int32_t));
        }
    }
  }
  return o;
}

}  // namespace ember::cpu
