// Other ONNX operators: NonMaxSuppression, GridSample, the signal operators (DFT, STFT, the
// windows, MelWeightMatrix), random generators and the training-domain optimizers (Adagrad,
// Adam, Momentum). Box selection and the signal matrices are computed on the host.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <random>

#include "ember/onnx/ops/context.h"
#include "ember/tensor/grid.h"

namespace ember::onnx::detail {

namespace {

// ---- NonMaxSuppression -------------------------------------------------------------------

template <Backend B>
std::vector<RValue<B>> nms(Ctx<B>& c) {
  const Tn<B>& boxes_t = c.in(0);
  const Tn<B>& scores_t = c.in(1);
  const int64_t max_out = c.has(2) ? c.ints(2)[0] : 0;
  const double iou_max = c.has(3) ? c.floats(3)[0] : 0.0;
  const bool has_thr = c.has(4);
  const double thr = has_thr ? c.floats(4)[0] : 0.0;
  const bool center = c.attr_i("center_point_box", 0) != 0;
  const auto boxes = host_floats(boxes_t), scores = host_floats(scores_t);
  const int64_t nb = boxes_t.shape()[0], n = boxes_t.shape()[1], nc = scores_t.shape()[1];
  if (scores_t.shape()[0] != nb || scores_t.shape()[2] != n)
    c.fail("boxes " + boxes_t.shape().to_string() + " and scores " + scores_t.shape().to_string() +
           " do not match");
  auto corners = [&](int64_t b, int64_t i) {
    const double* p = &boxes[static_cast<size_t>((b * n + i) * 4)];
    if (center)
      return std::array<double, 4>{p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2,
                                   p[0] + p[2] / 2};
    return std::array<double, 4>{std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]),
                                 std::max(p[1], p[3])};
  };
  auto iou = [](const std::array<double, 4>& a, const std::array<double, 4>& b) {
    const double ih = std::max(0.0, std::min(a[2], b[2]) - std::max(a[0], b[0]));
    const double iw = std::max(0.0, std::min(a[3], b[3]) - std::max(a[1], b[1]));
    const double inter = ih * iw;
    const double u = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
    return u > 0 ? inter / u : 0.0;
  };
  std::vector<int64_t> out;
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t k = 0; k < nc; ++k) {
      if (max_out <= 0) break;
      std::vector<int64_t> order(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      const double* s = &scores[static_cast<size_t>((b * nc + k) * n)];
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t x, int64_t y) { return s[x] > s[y]; });
      std::vector<int64_t> kept;
      for (int64_t i : order) {
        if (has_thr && !(s[i] > thr)) break;
        bool ok = true;
        for (int64_t j : kept)
          if (iou(corners(b, i), corners(b, j)) > iou_max) {
            ok = false;
            break;
          }
        if (!ok) continue;
        kept.push_back(i);
        out.insert(out.end(), {b, k, i});
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
      }
    }
  const auto rows = static_cast<int64_t>(out.size() / 3);
  return one(reshape(int_tensor<B>(out, c.device()), {rows, 3}));
}

// ---- GridSample ----------------------------------------------------------------------------

/// ONNX's reflection of a coordinate into [lo, hi] (as its reference does it).
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double d = lo - x;
    const auto n = static_cast<int64_t>(d / range);
    const double r = d - static_cast<double>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double d = x - hi;
    const auto n = static_cast<int64_t>(d / range);
    const double r = d - static_cast<double>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

double cubic(double t, double a = -0.75) {
  t = std::abs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

/// GridSample in the modes ember's grid_sample lacks (bicubic, reflection padding): the
/// taps and weights of every output point are computed on the host from the grid, then
/// gathered from the input on its device.
template <Backend B>
Tn<B> grid_sample_taps(const Ctx<B>& c, const Tn<B>& x, const Tn<B>& g, const std::string& mode,
                       const std::string& pad, bool align) {
  const Dims xd = dims_of(x), gd = dims_of(g);
  const int64_t n = xd[0], ch = xd[1], h = xd[2], w = xd[3], ho = gd[1], wo = gd[2];
  if (gd[0] != n || gd[3] != 2) c.fail("grid must be [N, H_out, W_out, 2]");
  const auto grid = host_floats(g);
  const double wlo = align ? 0 : -0.5, whi = align ? static_cast<double>(w - 1) : w - 0.5;
  const double hlo = align ? 0 : -0.5, hhi = align ? static_cast<double>(h - 1) : h - 0.5;
  auto unnorm = [&](double v, int64_t size) {
    return align ? (v + 1) / 2 * static_cast<double>(size - 1)
                 : ((v + 1) * static_cast<double>(size) - 1) / 2;
  };
  const int taps = mode == "nearest" ? 1 : mode == "bilinear" ? 4 : 16;
  const int64_t pts = ho * wo;
  std::vector<std::vector<int64_t>> idx(static_cast<size_t>(taps),
                                        std::vector<int64_t>(static_cast<size_t>(n * pts), 0));
  std::vector<std::vector<double>> wt(static_cast<size_t>(taps),
                                      std::vector<double>(static_cast<size_t>(n * pts), 0.0));
  // A pixel index made valid by the padding mode; false: outside with zeros padding.
  auto pixel = [&](int64_t i, int64_t size, double lo, double hi, int64_t& out) {
    if (pad == "zeros") {
      out = i;
      return i >= 0 && i < size;
    }
    double v = static_cast<double>(i);
    if (pad == "reflection") v = reflect(v, lo, hi);
    out = std::clamp<int64_t>(static_cast<int64_t>(v), 0, size - 1);
    return true;
  };
  for (int64_t b = 0; b < n; ++b)
    for (int64_t p = 0; p < pts; ++p) {
      const size_t at = static_cast<size_t>(b * pts + p);
      double ix = unnorm(grid[at * 2], w), iy = unnorm(grid[at * 2 + 1], h);
      if (mode != "bicubic") {  // the coordinate itself is padded first
        if (pad == "border") {
          ix = std::clamp(ix, 0.0, static_cast<double>(w - 1));
          iy = std::clamp(iy, 0.0, static_cast<double>(h - 1));
        } else if (pad == "reflection") {
          ix = std::clamp(reflect(ix, wlo, whi), 0.0, static_cast<double>(w - 1));
          iy = std::clamp(reflect(iy, hlo, hhi), 0.0, static_cast<double>(h - 1));
        }
      }
      auto put = [&](int t, int64_t yi, int64_t xi, double weight) {
        int64_t yy = 0, xx = 0;
        const bool in = pixel(yi, h, hlo, hhi, yy) & pixel(xi, w, wlo, whi, xx);
        idx[static_cast<size_t>(t)][at] = in ? yy * w + xx : 0;
        wt[static_cast<size_t>(t)][at] = in ? weight : 0.0;
      };
      if (taps == 1) {
        put(0, static_cast<int64_t>(std::nearbyint(iy)), static_cast<int64_t>(std::nearbyint(ix)),
            1.0);
      } else if (taps == 4) {
        const double fx = std::floor(ix), fy = std::floor(iy), tx = ix - fx, ty = iy - fy;
        const auto x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
        put(0, y0, x0, (1 - tx) * (1 - ty));
        put(1, y0, x0 + 1, tx * (1 - ty));
        put(2, y0 + 1, x0, (1 - tx) * ty);
        put(3, y0 + 1, x0 + 1, tx * ty);
      } else {
        const double fx = std::floor(ix), fy = std::floor(iy), tx = ix - fx, ty = iy - fy;
        const auto x0 = static_cast<int64_t>(fx) - 1, y0 = static_cast<int64_t>(fy) - 1;
        for (int j = 0; j < 4; ++j)
          for (int i = 0; i < 4; ++i)
            put(j * 4 + i, y0 + j, x0 + i, cubic(ty - (j - 1)) * cubic(tx - (i - 1)));
      }
    }
  Tn<B> flat = reshape(x, {n, ch, h * w});
  Tn<B> y;
  for (int t = 0; t < taps; ++t) {
    Tn<B> i = expand(
        reshape(constant<B>(TensorData::from<int64_t>(idx[static_cast<size_t>(t)], Shape{n, pts}),
                            x.device()),
                {n, 1, pts}),
        {n, ch, pts});
    OpAttrs a;
    a.dim = 2;
    Tn<B> v = op<B>(OpCode::Gather, std::move(a), {flat, i});
    Tn<B> k = reshape(
        constant<B>(TensorData::from<double>(wt[static_cast<size_t>(t)], Shape{n, pts}), x.device())
            .cast(x.dtype()),
        {n, 1, pts});
    y = t == 0 ? v * k : y + v * k;
  }
  return reshape(y, {n, ch, ho, wo});
}

template <Backend B>
std::vector<RValue<B>> grid_sample_op(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const Tn<B>& g = c.in(1);
  if (x.rank() != 4) c.fail("only 2-d sampling ([N, C, H, W]) is supported");
  std::string mode = c.attr_s("mode", "bilinear");
  if (mode == "linear") mode = "bilinear";
  if (mode == "cubic") mode = "bicubic";
  const std::string pad = c.attr_s("padding_mode", "zeros");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    c.fail("mode \"" + mode + "\" is not one of bilinear, nearest, bicubic");
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    c.fail("padding_mode \"" + pad + "\" is not one of zeros, border, reflection");
  const bool align = c.attr_i("align_corners", 0) != 0;
  if (mode == "bicubic" || pad == "reflection")
    return one(grid_sample_taps(c, x, g, mode, pad, align));
  auto y = grid_sample(Tensor<B, 4>(x.handle()), Tensor<B, 4>(g.handle()),
                       mode == "nearest" ? GridMode::Nearest : GridMode::Bilinear,
                       pad == "border" ? GridPadding::Border : GridPadding::Zeros, align);
  return one(Tn<B>(y.handle()));
}

// ---- signal ------------------------------------------------------------------------------

/// [N, N2] cos and sin matrices of exp(-+2 pi i n k / N) for n < rows, k < cols.
template <Backend B>
std::pair<Tn<B>, Tn<B>> dft_matrices(int64_t rows, int64_t cols, int64_t n, Device dev, DType t) {
  std::vector<double> cs(static_cast<size_t>(rows * cols)), sn(cs.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t k = 0; k < cols; ++k) {
      const double a =
          2 * std::numbers::pi * static_cast<double>((i * k) % n) / static_cast<double>(n);
      cs[static_cast<size_t>(i * cols + k)] = std::cos(a);
      sn[static_cast<size_t>(i * cols + k)] = std::sin(a);
    }
  auto make = [&](const std::vector<double>& v) {
    return constant<B>(TensorData::from<double>(v, Shape{rows, cols}), dev).cast(t);
  };
  return {make(cs), make(sn)};
}

/// DFT along the last dim of re/im [..., n]: [..., bins] each.
template <Backend B>
std::pair<Tn<B>, Tn<B>> dft_last(const Tn<B>& re, const std::optional<Tn<B>>& im, int64_t bins,
                                 bool inverse) {
  const int64_t n = re.shape()[static_cast<size_t>(re.rank() - 1)];
  auto [cs, sn] = dft_matrices<B>(n, bins, n, re.device(), re.dtype());
  Tn<B> yr, yi;
  if (!inverse) {  // X = sum x e^{-i a}: re = xr cos + xi sin, im = xi cos - xr sin
    yr = re.matmul(cs);
    yi = -(re.matmul(sn));
    if (im) {
      yr = yr + im->matmul(sn);
      yi = yi + im->matmul(cs);
    }
  } else {  // x = 1/n sum X e^{+i a}
    yr = re.matmul(cs);
    yi = re.matmul(sn);
    if (im) {
      yr = yr - im->matmul(sn);
      yi = yi + im->matmul(cs);
    }
    yr = yr / static_cast<double>(n);
    yi = yi / static_cast<double>(n);
  }
  return {yr, yi};
}

template <Backend B>
std::vector<RValue<B>> dft(Ctx<B>& c) {
  Tn<B> x = c.in(0);
  const int64_t r = x.rank();
  const int64_t axis = norm_axis(c, c.attr_i("axis", 1), r - 1);
  const bool inverse = c.attr_i("inverse", 0) != 0, onesided = c.attr_i("onesided", 0) != 0;
  const int64_t comps = x.shape()[static_cast<size_t>(r - 1)];
  if (comps != 1 && comps != 2) c.fail("the last dim must be 1 (real) or 2 (complex)");
  Dims order;
  for (int64_t i = 0; i < r - 1; ++i)
    if (i != axis) order.push_back(i);
  order.push_back(axis);
  Tn<B> re = permute(slice_axis(x, r - 1, 0, 1, 1), [&] {
    Dims o = order;
    o.push_back(r - 1);
    return o;
  }());
  Dims sq = dims_of(re);
  sq.erase(sq.size() - 1);
  re = reshape(re, sq);
  std::optional<Tn<B>> im;
  if (comps == 2) {
    Dims o = order;
    o.push_back(r - 1);
    im = reshape(permute(slice_axis(x, r - 1, 1, 2, 1), o), sq);
  }
  int64_t n = sq.back();
  if (c.has(1)) {
    const int64_t len = c.ints(1)[0];
    if (len <= 0) c.fail("dft_length must be > 0");
    auto fit = [&](const Tn<B>& t) {
      if (len <= n) return slice_axis(t, t.rank() - 1, 0, len, 1);
      Dims d = dims_of(t);
      d.back() = len - n;
      return cat<B>({t, full<B>(d, 0, t.dtype(), t.device())}, t.rank() - 1);
    };
    re = fit(re);
    if (im) im = fit(*im);
    n = len;
  }
  const int64_t bins = onesided ? n / 2 + 1 : n;
  auto [yr, yi] = dft_last(re, im, bins, inverse);
  Dims d = dims_of(yr);
  d.push_back(1);
  Tn<B> y = cat<B>({reshape(yr, d), reshape(yi, d)}, static_cast<int64_t>(d.size()) - 1);
  // back to the input's dim order: the transformed dim was moved last (before the re/im dim)
  Dims back(static_cast<size_t>(r));
  for (size_t i = 0; i < order.size(); ++i)
    back[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
  back[static_cast<size_t>(r - 1)] = r - 1;
  return one(permute(y, back));
}

template <Backend B>
std::vector<RValue<B>> stft(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);  // [batch, length, 1 or 2]
  if (x.rank() != 3) c.fail("signal must be [batch, length, 1 or 2]");
  const int64_t step = c.ints(1)[0];
  std::optional<Tn<B>> window = c.opt(2);
  int64_t flen = c.has(3) ? c.ints(3)[0] : window ? window->shape()[0] : 0;
  if (flen <= 0 || step <= 0) c.fail("frame_length and frame_step must be > 0");
  const int64_t batch = x.shape()[0], len = x.shape()[1];
  if (flen > len) c.fail("frame_length is longer than the signal");
  const int64_t frames = 1 + (len - flen) / step;
  const bool onesided = c.attr_i("onesided", 1) != 0;
  std::vector<int64_t> idx;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t i = 0; i < flen; ++i) idx.push_back(f * step + i);
  auto framed = [&](int64_t comp) {
    Tn<B> s = reshape(slice_axis(x, 2, comp, comp + 1, 1), {batch, len});
    OpAttrs a;
    a.dim = 1;
    Tn<B> t = reshape(op<B>(OpCode::IndexSelect, std::move(a), {s, int_tensor<B>(idx, x.device())}),
                      {batch, frames, flen});
    if (window) t = t * reshape(window->cast(t.dtype()), {1, 1, flen});
    return t;
  };
  Tn<B> re = framed(0);
  std::optional<Tn<B>> im;
  if (x.shape()[2] == 2) im = framed(1);
  auto [yr, yi] = dft_last(re, im, onesided ? flen / 2 + 1 : flen, false);
  Dims d = dims_of(yr);
  d.push_back(1);
  return one(cat<B>({reshape(yr, d), reshape(yi, d)}, 3));
}

template <Backend B, int Kind>  // 0 Hann, 1 Hamming, 2 Blackman
std::vector<RValue<B>> window_op(Ctx<B>& c) {
  const int64_t n = c.ints(0)[0];
  if (n < 0) c.fail("size must be >= 0");
  const bool periodic = c.attr_i("periodic", 1) != 0;
  const double d = static_cast<double>(periodic ? n : n - 1);
  std::vector<double> w(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double a = d > 0 ? 2 * std::numbers::pi * static_cast<double>(i) / d : 0;
    w[static_cast<size_t>(i)] = Kind == 0   ? 0.5 - 0.5 * std::cos(a)
                                : Kind == 1 ? 25.0 / 46 - 21.0 / 46 * std::cos(a)
                                            : 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
  }
  const DType t = c.attr_dtype("output_datatype", DType::F32);
  return one(constant<B>(TensorData::from<double>(w, Shape{n}), c.device()).cast(t));
}

template <Backend B>
std::vector<RValue<B>> mel_weight_matrix(Ctx<B>& c) {
  const int64_t mels = c.ints(0)[0], dft_len = c.ints(1)[0], rate = c.ints(2)[0];
  const double lo = c.floats(3)[0], hi = c.floats(4)[0];
  if (mels <= 0 || dft_len <= 0 || rate <= 0) c.fail("sizes and the sample rate must be > 0");
  const int64_t bins = dft_len / 2 + 1;
  auto to_mel = [](double f) { return 2595 * std::log10(1 + f / 700); };
  const double ml = to_mel(lo), mh = to_mel(hi),
               step = (mh - ml) / static_cast<double>(mels + 2);  // as ONNX's reference
  std::vector<int64_t> fb(static_cast<size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double hz = 700 * (std::pow(10, (static_cast<double>(i) * step + ml) / 2595) - 1);
    fb[static_cast<size_t>(i)] = static_cast<int64_t>(
        std::floor(static_cast<double>(dft_len + 1) * hz / static_cast<double>(rate)));
  }
  std::vector<double> out(static_cast<size_t>(bins * mels), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& {
    if (j < 0 || j >= bins) c.fail("a mel band falls outside the spectrum");
    return out[static_cast<size_t>(j * mels + i)];
  };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t l = fb[static_cast<size_t>(i)], m = fb[static_cast<size_t>(i + 1)],
                  h = fb[static_cast<size_t>(i + 2)];
    if (m == l)
      at(m, i) = 1;
    else
      for (int64_t j = l; j <= m; ++j)
        at(j, i) = static_cast<double>(j - l) / static_cast<double>(m - l);
    if (h > m)
      for (int64_t j = m; j < h; ++j)
        at(j, i) = static_cast<double>(h - j) / static_cast<double>(h - m);
  }
  const DType t = c.attr_dtype("output_datatype", DType::F32);
  return one(constant<B>(TensorData::from<double>(out, Shape{bins, mels}), c.device()).cast(t));
}

// ---- random --------------------------------------------------------------------------------

template <Backend B>
Tn<B> random(const Ctx<B>& c, OpCode code, const Dims& shape, DType t, double a, double b) {
  OpAttrs at;
  at.shape = shape;
  at.scalar = Scalar(a);
  at.scalar2 = Scalar(b);
  at.dtype = t;
  at.seed = c.has_attr("seed") ? static_cast<uint64_t>(c.attr_f("seed", 0) * 1000003.0)
                               : static_cast<uint64_t>(std::random_device{}());
  return Tn<B>(apply<B>(Op{code, std::move(at)}, std::span<typename B::Handle>(), c.device()));
}

template <Backend B, bool Normal, bool Like>
std::vector<RValue<B>> random_op(Ctx<B>& c) {
  Dims shape;
  DType t = DType::F32;
  if (Like) {
    shape = dims_of(c.in(0));
    t = c.attr_dtype("dtype", c.in(0).dtype());
  } else {
    auto s = c.attr_ints("shape");
    shape = Dims(s.begin(), s.end());
    t = c.attr_dtype("dtype", DType::F32);
  }
  if (Normal)
    return one(
        random(c, OpCode::RandomNormal, shape, t, c.attr_f("mean", 0.0), c.attr_f("scale", 1.0)));
  return one(
      random(c, OpCode::RandomUniform, shape, t, c.attr_f("low", 0.0), c.attr_f("high", 1.0)));
}

template <Backend B>
std::vector<RValue<B>> bernoulli(Ctx<B>& c) {
  const Tn<B>& p = c.in(0);
  const DType t = c.attr_dtype("dtype", p.dtype());
  Tn<B> u = random(c, OpCode::RandomUniform, dims_of(p), p.dtype(), 0.0, 1.0);
  return one(u.lt(p).cast(t));
}

// ---- training-domain optimizers (ai.onnx.preview.training) ----------------------------------

/// (R, T, then `groups` lists of n tensors each): n and the lists.
template <Backend B>
std::vector<std::vector<Tn<B>>> opt_groups(const Ctx<B>& c, size_t groups) {
  const size_t rest = c.num_inputs() - 2;
  if (rest % groups != 0)
    c.fail("the inputs do not split into " + std::to_string(groups) + " lists");
  const size_t n = rest / groups;
  std::vector<std::vector<Tn<B>>> g(groups);
  for (size_t k = 0; k < groups; ++k)
    for (size_t i = 0; i < n; ++i) g[k].push_back(c.in(2 + k * n + i));
  return g;
}

template <Backend B>
std::vector<RValue<B>> adagrad(Ctx<B>& c) {
  const double lr = c.floats(0)[0];
  const double t = static_cast<double>(c.ints(1)[0]);
  const double decay = c.attr_f("decay_factor", 0.0), eps = c.attr_f("epsilon", 1e-6),
               norm = c.attr_f("norm_coefficient", 0.0);
  auto g = opt_groups(c, 3);  // X, G, H
  const double r = lr / (1 + t * decay);
  std::vector<RValue<B>> xs, hs;
  for (size_t i = 0; i < g[0].size(); ++i) {
    Tn<B> greg = g[0][i] * norm + g[1][i];
    Tn<B> h = g[2][i] + greg * greg;
    xs.push_back(RValue<B>::of(g[0][i] - greg / (h.sqrt() + eps) * r));
    hs.push_back(RValue<B>::of(h));
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

template <Backend B>
std::vector<RValue<B>> momentum(Ctx<B>& c) {
  const double lr = c.floats(0)[0];
  const int64_t t = c.ints(1)[0];
  const double alpha = c.attr_f("alpha", 0.0), beta = c.attr_f("beta", 0.0),
               norm = c.attr_f("norm_coefficient", 0.0);
  const std::string mode = c.attr_s("mode", "standard");
  auto g = opt_groups(c, 3);  // X, G, V
  const double b = t > 0 ? beta : 1.0;
  std::vector<RValue<B>> xs, vs;
  for (size_t i = 0; i < g[0].size(); ++i) {
    Tn<B> greg = g[0][i] * norm + g[1][i];
    Tn<B> v = g[2][i] * alpha + greg * b;
    Tn<B> step = mode == "nesterov" ? greg + v * alpha : v;
    xs.push_back(RValue<B>::of(g[0][i] - step * lr));
    vs.push_back(RValue<B>::of(v));
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  return xs;
}

template <Backend B>
std::vector<RValue<B>> adam(Ctx<B>& c) {
  const double lr = c.floats(0)[0];
  const double t = static_cast<double>(c.ints(1)[0]);
  const double alpha = c.attr_f("alpha", 0.9), beta = c.attr_f("beta", 0.999),
               eps = c.attr_f("epsilon", 1e-6), norm = c.attr_f("norm_coefficient", 0.0),
               post = c.attr_f("norm_coefficient_post", 0.0);
  auto g = opt_groups(c, 4);  // X, G, V, H
  const double r = t > 0 ? lr * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t)) : lr;
  std::vector<RValue<B>> xs, vs, hs;
  for (size_t i = 0; i < g[0].size(); ++i) {
    Tn<B> greg = g[0][i] * norm + g[1][i];
    Tn<B> v = g[2][i] * alpha + greg * (1 - alpha);
    Tn<B> h = g[3][i] * beta + greg * greg * (1 - beta);
    Tn<B> x = g[0][i] - v / (h.sqrt() + eps) * r;
    xs.push_back(RValue<B>::of(post != 0 ? x * (1 - post) : x));
    vs.push_back(RValue<B>::of(v));
    hs.push_back(RValue<B>::of(h));
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

}  // namespace

template <Backend B>
void register_misc_ops(OpRegistry<B>& r) {
  r["NonMaxSuppression"] = nms<B>;
  r["GridSample"] = grid_sample_op<B>;
  r["DFT"] = dft<B>;
  r["STFT"] = stft<B>;
  r["HannWindow"] = window_op<B, 0>;
  r["HammingWindow"] = window_op<B, 1>;
  r["BlackmanWindow"] = window_op<B, 2>;
  r["MelWeightMatrix"] = mel_weight_matrix<B>;
  r["RandomUniform"] = random_op<B, false, false>;
  r["RandomNormal"] = random_op<B, true, false>;
  r["RandomUniformLike"] = random_op<B, false, true>;
  r["RandomNormalLike"] = random_op<B, true, true>;
  r["Bernoulli"] = bernoulli<B>;
  r["ai.onnx.preview.training.Adagrad"] = adagrad<B>;
  r["ai.onnx.preview.training.Momentum"] = momentum<B>;
  r["ai.onnx.preview.training.Adam"] = adam<B>;
}

template void register_misc_ops<Dispatch>(OpRegistry<Dispatch>&);
template void register_misc_ops<Autodiff<Dispatch>>(OpRegistry<Autodiff<Dispatch>>&);

}  // namespace ember::onnx::detail
