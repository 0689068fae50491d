// Internal: the "wide" layout of a stride-1 window. Over the input zero-padded to
// P = in + 2 * padding, output (od, oh, ow) reads input (od + kd * dd, oh + kh * dh,
// ow + kw * dw). Laid out at the padded input's pitch (wide position
// i = (od * P1 + oh) * P2 + ow), every tap is one flat offset into the padded plane, so a tap's
// inputs for all outputs are one contiguous run; the P2 - O2 extra positions at the end of each
// wide row are computed and dropped (or zero, on the way in).
//
//   Wide w(g);                                  // g: a stride-1 Geom (Wide::fits(g))
//   const T* xp = padded_plane(w, g, x, buf);   // x itself when there is no padding
//   // output wide position i = sum over taps t of weight[t] * xp[i + w.off[t]], i < w.wide
//   w.for_rows(g, [&](int64_t wide_row, int64_t out_row) { /* copy g.out[2] values */ });
#pragma once
#include <vector>

#include "ember/backends/cpu/simd.h"
#include "ember/backends/cpu/spatial.h"

namespace ember::cpu {

/// Outputs at a pitch: wide position i = (od * pitch[1] + oh) * pitch[2] + ow, the pitch[2] -
/// out[2] positions after each row (and the rows after each output depth slice) computed and
/// dropped, or zero on the way in. The wide layout's and the phase layout's (depthwise.cpp).
struct WideRows {
  int64_t pitch[3];  // the dims the outputs are laid out in
  int64_t wide;      // wide output positions: up to the last real output

  // Outputs (a plane of g.out) at the wide pitch in dst[0, wide), zeros between the rows.
  template <class T>
  void widen(const Geom& g, const T* out, T* dst) const {
    std::fill(dst, dst + wide, T(0));
    for_rows(g, [&](int64_t wr, int64_t orow) { copy_short(out + orow, dst + wr, g.out[2]); });
  }
  // The outputs (a plane of g.out) out of their wide layout src.
  template <class T>
  void narrow(const Geom& g, const T* src, T* out) const {
    for_rows(g, [&](int64_t wr, int64_t orow) { copy_short(src + wr, out + orow, g.out[2]); });
  }
  // f(wide row offset, output row offset) for every output row.
  template <class F>
  void for_rows(const Geom& g, F&& f) const {
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        f((od * pitch[1] + oh) * pitch[2], (od * g.out[1] + oh) * g.out[2]);
  }
};

/// The wide layout of stride-1 window g: its pitch is the zero-padded input's dims.
struct Wide : WideRows {
  std::vector<int64_t> off;  // each tap's flat offset in the padded input
  bool padded = false;

  explicit Wide(const Geom& g) {
    for (int i = 0; i < 3; ++i) {
      pitch[i] = g.in[i] + 2 * g.p[i];
      padded = padded || g.p[i] != 0;
    }
    wide = ((g.out[0] - 1) * pitch[1] + g.out[1] - 1) * pitch[2] + g.out[2];
    for (int64_t kd = 0; kd < g.k[0]; ++kd)
      for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw)
          off.push_back((kd * g.d[0] * pitch[1] + kh * g.d[1]) * pitch[2] + kw * g.d[2]);
  }
  int64_t plane() const { return pitch[0] * pitch[1] * pitch[2]; }

  // Stride 1 everywhere, and outputs exactly as far as the window reaches.
  static bool fits(const Geom& g) {
    for (int i = 0; i < 3; ++i)
      if (g.s[i] != 1 || g.out[i] != g.in[i] + 2 * g.p[i] - g.d[i] * (g.k[i] - 1) || g.out[i] < 1)
        return false;
    return true;
  }

  // x (a plane of g.in) copied into dst (a plane of the padded input) with zeros around it
  // (there already where `zeroed`: dst holds an earlier padded plane).
  template <class T>
  void pad_plane(const Geom& g, const T* x, T* dst, bool zeroed = false) const {
    if (!zeroed) std::fill(dst, dst + plane(), T(0));
    for (int64_t d = 0; d < g.in[0]; ++d)
      for (int64_t h = 0; h < g.in[1]; ++h)
        copy_short(x + (d * g.in[1] + h) * g.in[2],
                   dst + ((d + g.p[0]) * pitch[1] + h + g.p[1]) * pitch[2] + g.p[2], g.in[2]);
  }
  // The interior of src (a padded plane) copied out into x (a plane of g.in).
  template <class T>
  void unpad_plane(const Geom& g, const T* src, T* x) const {
    for (int64_t d = 0; d < g.in[0]; ++d)
      for (int64_t h = 0; h < g.in[1]; ++h)
        copy_short(src + ((d + g.p[0]) * pitch[1] + h + g.p[1]) * pitch[2] + g.p[2],
                   x + (d * g.in[1] + h) * g.in[2], g.in[2]);
  }
};

/// The padded plane of x (a plane of g.in): x itself without padding, else `buf` filled (its
/// padding left as it is where `zeroed`: buf holds an earlier padded plane of w).
template <class T>
const T* padded_plane(const Wide& w, const Geom& g, const T* x, T* buf, bool zeroed = false) {
  if (!w.padded) return x;
  w.pad_plane(g, x, buf, zeroed);
  return buf;
}

}  // namespace ember::cpu
