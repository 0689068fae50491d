// The weight gradient of a 3x3 convolution by Winograd's F(3x3, 2x2). For one output channel o
// and input channel c, dw[o, c] is a 3x3 correlation of the input x with the output gradient gy
// as the filter: dw[u][v] = sum over positions (i, j) of gy[i][j] x[i + u][j + v] (x padded).
// Cut gy into 2x2 tiles: each tile's share is a correlation of its 4x4 patch of x with the
// tile, which F(3, 2) computes as G^T [(A g A^T) .* (B^T d B)] G with
//   B^T = F(2, 3)'s (the forward's input transform), A = F(2, 3)'s A^T transposed (4 x 2),
//   G^T = F(2, 3)'s G transposed (3 x 4).
// Summed over tiles and images, the 16 products (.*) become 16 GEMMs, M[xi] = U[xi] V[xi]^T with
// U[xi] [c_out][tiles] the transformed gradient tiles and V[xi] [c_in][tiles] the transformed
// patches: 64 multiplies per tile and channel pair where the direct sum takes 36 per output
// position, 144 a tile (2.25 times fewer). dw = G^T M G at the end.
//
// The transforms take 8 tiles of a tile row at a time, one vector each: a tile's columns are
// 2 apart, so each patch column is the even or odd floats of two loads.
#include <algorithm>
#include <cstring>

#include "ember/backends/cpu/direct_conv.h"
#include "ember/backends/cpu/gemm.h"
#include "ember/backends/cpu/winograd.h"
#include "ember/core/thread_pool.h"

namespace ember::cpu {

namespace {

typedef float vf __attribute__((vector_size(32)));
constexpr int64_t kLanes = 8;
constexpr int64_t kChunkTiles = 768;  // tiles a chunk of images, at least (the GEMMs' K)

inline vf load(const float* p) {
  vf v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, vf v) { std::memcpy(p, &v, sizeof v); }
inline vf evens(vf a, vf b) { return __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14); }
inline vf odds(vf a, vf b) { return __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15); }

// r = B^T x for a column (or row) of 4.
inline void bt(const vf (&x)[4], vf (&r)[4]) {
  r[0] = x[0] - x[2];
  r[1] = x[1] + x[2];
  r[2] = x[2] - x[1];
  r[3] = x[1] - x[3];
}
// r = A g for a column (or row) of 2: A = {{1, 0}, {1, 1}, {1, -1}, {0, -1}}.
inline void ag(vf g0, vf g1, vf (&r)[4]) {
  r[0] = g0;
  r[1] = g0 + g1;
  r[2] = g0 - g1;
  r[3] = -g1;
}

// V's 16 planes (plane apart) at 8 tiles of one tile row: B^T d B for the patches whose rows
// start at row (pitch apart), the first tile's at column 0, the next 2 further.
inline void input_tiles(const float* row, int64_t pitch, float* v, int64_t plane) {
  vf d[4][4];
  for (int k = 0; k < 4; ++k) {
    const float* r = row + k * pitch;
    const vf a = load(r), b = load(r + 8), a2 = load(r + 2), b2 = load(r + 10);
    d[k][0] = evens(a, b);
    d[k][1] = odds(a, b);
    d[k][2] = evens(a2, b2);
    d[k][3] = odds(a2, b2);
  }
  vf t[4][4];  // t[i][q] = (B^T d)[i][q]
  for (int q = 0; q < 4; ++q) {
    vf col[4] = {d[0][q], d[1][q], d[2][q], d[3][q]}, r[4];
    bt(col, r);
    for (int i = 0; i < 4; ++i) t[i][q] = r[i];
  }
  for (int i = 0; i < 4; ++i) {
    vf r[4];
    bt(t[i], r);
    for (int j = 0; j < 4; ++j) store(v + (4 * i + j) * plane, r[j]);
  }
}

// U's 16 planes at 8 tiles of one tile row: A g A^T for the 2x2 gradient tiles whose rows start
// at row (pitch apart).
inline void gradient_tiles(const float* row, int64_t pitch, float* u, int64_t plane) {
  vf h[2][4];  // h[a] = A applied to the tile's row a
  for (int a = 0; a < 2; ++a) {
    const vf p = load(row + a * pitch), q = load(row + a * pitch + 8);
    ag(evens(p, q), odds(p, q), h[a]);
  }
  for (int j = 0; j < 4; ++j) {
    vf r[4];
    ag(h[0][j], h[1][j], r);
    for (int i = 0; i < 4; ++i) store(u + (4 * i + j) * plane, r[i]);
  }
}

constexpr float kGT[3][4] = {{1, 0.5f, 0.5f, 0}, {0, 0.5f, -0.5f, 0}, {0, 0.5f, 0.5f, 1}};

}  // namespace

bool winograd_weight_grad_fits(const Geom& g, int64_t groups, int64_t c_in, int64_t c_out) {
  return winograd_fits(g, groups, c_in, c_out) && c_in >= 32 && c_out >= 32 && g.out[2] >= 8;
}

void winograd_weight_grad_f32(const float* x, const float* gy, float* dw, int64_t n, int64_t c_in,
                              int64_t c_out, const Geom& g) {
  if (n == 0) {
    std::fill(dw, dw + c_out * c_in * 9, 0.0f);
    return;
  }
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t th = (OH + 1) / 2, tw = (OW + 1) / 2, twp = (tw + kLanes - 1) / kLanes * kLanes;
  const int64_t tiles = th * twp;                   // per image, tile rows padded to whole vectors
  const int64_t hp = 2 * th + 2, wp = 2 * twp + 2;  // x padded: every patch inside
  const int64_t hg = 2 * th, wg = 2 * twp;          // gy padded with zeros: the extra tiles are 0
  // Images in chunks of at least kChunkTiles tiles, so that the GEMMs' K is long enough; a
  // chunk's tiles are image after image.
  const int64_t per = std::clamp<int64_t>((kChunkTiles + tiles - 1) / tiles, 1, n);
  const int64_t ct = per * tiles;  // a full chunk's tiles
  Scratch<float> xp(per * c_in * hp * wp), gp(per * c_out * hg * wg);
  Scratch<float> v(16 * c_in * ct), u(16 * c_out * ct), m(16 * c_out * c_in);
  for (int64_t img0 = 0; img0 < n; img0 += per) {
    const int64_t imgs = std::min(per, n - img0), k = imgs * tiles;
    pad_planes(x + img0 * c_in * H * W, imgs * c_in, H, W, hp, wp, g.p[1], g.p[2], xp.get());
    pad_planes(gy + img0 * c_out * OH * OW, imgs * c_out, OH, OW, hg, wg, 0, 0, gp.get());
    const int64_t groups = twp / kLanes;
    // items: (image, channel of x or of gy, tile row)
    parallel_for(
        imgs * (c_in + c_out) * th, std::max<int64_t>(1, kGrain / (16 * twp)),
        [&](int64_t b, int64_t e) {
          for (int64_t it = b; it < e; ++it) {
            const int64_t ti = it % th, ch = it / th % (c_in + c_out);
            const int64_t im = it / th / (c_in + c_out);
            for (int64_t q = 0; q < groups; ++q) {
              const int64_t t0 = im * tiles + ti * twp + q * kLanes;
              if (ch < c_in)
                input_tiles(xp.get() + ((im * c_in + ch) * hp + 2 * ti) * wp + 2 * q * kLanes, wp,
                            v.get() + ch * k + t0, c_in * k);
              else
                gradient_tiles(
                    gp.get() + ((im * c_out + ch - c_in) * hg + 2 * ti) * wg + 2 * q * kLanes, wg,
                    u.get() + (ch - c_in) * k + t0, c_out * k);
            }
          }
        });
    // M[xi] (+)= U[xi] V[xi]^T, each xi on one thread: chunks add in order, whatever the threads
    parallel_for(16, 1, [&](int64_t b, int64_t e) {
      for (int64_t xi = b; xi < e; ++xi)
        gemm_f32(c_out, c_in, k, {u.get() + xi * c_out * k, k, 1}, {v.get() + xi * c_in * k, 1, k},
                 m.get() + xi * c_out * c_in, c_in, img0 > 0, false);
    });
  }
  // dw[o][c] = G^T M[.][o][c] G
  parallel_for(c_out * c_in, 64, [&](int64_t b, int64_t e) {
    for (int64_t oc = b; oc < e; ++oc) {
      float mm[4][4], t[3][4];
      for (int xi = 0; xi < 16; ++xi) mm[xi / 4][xi % 4] = m.get()[xi * c_out * c_in + oc];
      for (int r = 0; r < 3; ++r)
        for (int j = 0; j < 4; ++j)
          t[r][j] = kGT[r][0] * mm[0][j] + kGT[r][1] * mm[1][j] + kGT[r][2] * mm[2][j] +
                    kGT[r][3] * mm[3][j];
      float* out = dw + oc * 9;
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s)
          out[r * 3 + s] =
              t[r][0] * kGT[s][0] + t[r][1] * kGT[s][1] + t[r][2] * kGT[s][2] + t[r][3] * kGT[s][3];
    }
  });
}

}  // namespace ember::cpu
