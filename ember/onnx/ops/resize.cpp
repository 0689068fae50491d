// ONNX Resize and Upsample: separable 1-d interpolation along each resized axis, last axis
// first (as ONNX's reference nests it). Per axis the source positions and tap weights are
// computed on the host from the coordinate transformation, then applied on the device as
// index_select + a weighted sum of 1 (nearest), 2 (linear) or 4 (cubic) taps.
#include <algorithm>
#include <cmath>

#include "ember/onnx/ops/context.h"

namespace ember::onnx::detail {

namespace {

struct ResizeSpec {
  std::string mode = "nearest";
  std::string transform = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
};

double source_coord(const ResizeSpec& r, int64_t o, int64_t in, int64_t out, double scale,
                    double roi_start, double roi_end) {
  const double x = static_cast<double>(o);
  const auto& t = r.transform;
  if (t == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (t == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  // ONNX uses the unrounded output length in * scale here (equal to out for sizes).
  if (t == "align_corners")
    return out == 1 ? 0.0 : x * static_cast<double>(in - 1) / (static_cast<double>(in) * scale - 1);
  if (t == "asymmetric") return x / scale;
  if (t == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (t == "tf_crop_and_resize")
    return out > 1 ? roi_start * static_cast<double>(in - 1) + x * (roi_end - roi_start) *
                                                                   static_cast<double>(in - 1) /
                                                                   static_cast<double>(out - 1)
                   : 0.5 * (roi_start + roi_end) * static_cast<double>(in - 1);
  return (x + 0.5) / scale - 0.5;
}

double cubic_weight(double t, double a) {
  t = std::abs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

/// Interpolates axis `axis` of x from size `in` to `out`.
template <Backend B>
Tn<B> resize_axis(const Ctx<B>& c, const Tn<B>& x, int64_t axis, int64_t out, double scale,
                  const ResizeSpec& r, double roi_start, double roi_end) {
  const int64_t in = x.shape()[static_cast<size_t>(axis)];
  const int taps = r.mode == "nearest" ? 1 : r.mode == "linear" ? 2 : 4;
  std::vector<std::vector<int64_t>> idx(static_cast<size_t>(taps),
                                        std::vector<int64_t>(static_cast<size_t>(out)));
  std::vector<std::vector<double>> w(static_cast<size_t>(taps),
                                     std::vector<double>(static_cast<size_t>(out)));
  std::vector<int64_t> outside;
  bool any_outside = false;
  auto clampi = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  for (int64_t o = 0; o < out; ++o) {
    const double s = source_coord(r, o, in, out, scale, roi_start, roi_end);
    const auto k = static_cast<size_t>(o);
    const bool out_of_range =
        r.transform == "tf_crop_and_resize" && (s < 0 || s > static_cast<double>(in - 1));
    outside.push_back(out_of_range ? 1 : 0);
    any_outside |= out_of_range;
    if (taps == 1) {
      double f = std::floor(s);
      const double frac = s - f;
      int64_t i;
      if (r.nearest == "floor")
        i = static_cast<int64_t>(f);
      else if (r.nearest == "ceil")
        i = static_cast<int64_t>(std::ceil(s));
      else if (r.nearest == "round_prefer_ceil")
        i = static_cast<int64_t>(frac >= 0.5 ? f + 1 : f);
      else
        i = static_cast<int64_t>(frac > 0.5 ? f + 1 : f);  // round_prefer_floor
      idx[0][k] = clampi(i);
      w[0][k] = 1;
      continue;
    }
    const double f = std::floor(s);
    const double t = s - f;
    const auto i0 = static_cast<int64_t>(f);
    double sum = 0;
    for (int j = 0; j < taps; ++j) {
      const int64_t pos = taps == 2 ? i0 + j : i0 - 1 + j;
      double wt = taps == 2 ? (j == 0 ? 1 - t : t) : cubic_weight(t - (j - 1), r.cubic_a);
      if (r.exclude_outside && (pos < 0 || pos >= in)) wt = 0;
      idx[static_cast<size_t>(j)][k] = clampi(pos);
      w[static_cast<size_t>(j)][k] = wt;
      sum += wt;
    }
    if (r.exclude_outside && sum != 0)
      for (int j = 0; j < taps; ++j) w[static_cast<size_t>(j)][k] /= sum;
  }
  Dims wd(static_cast<size_t>(x.rank()), 1);
  wd[static_cast<size_t>(axis)] = out;
  Tn<B> y;
  for (int j = 0; j < taps; ++j) {
    OpAttrs a;
    a.dim = axis;
    Tn<B> picked = op<B>(OpCode::IndexSelect, std::move(a),
                         {x, int_tensor<B>(idx[static_cast<size_t>(j)], x.device())});
    if (taps == 1) {
      y = picked;
      break;
    }
    std::vector<double> wv = w[static_cast<size_t>(j)];
    Tn<B> wt = reshape(
        constant<B>(TensorData::from<double>(wv, Shape{out}), x.device()).cast(x.dtype()), wd);
    y = j == 0 ? picked * wt : y + picked * wt;
  }
  if (any_outside) {
    Tn<B> mask = reshape(int_tensor<B>(outside, x.device()), wd).gt(0.0);
    y = where(mask, scalar_of(y, r.extrapolation), y);
  }
  (void)c;
  return y;
}

template <Backend B>
std::vector<RValue<B>> resize(Ctx<B>& c) {
  Tn<B> x = c.in(0);
  const bool upsample = c.node().op_type == "Upsample";
  const int64_t r = x.rank();
  ResizeSpec spec;
  spec.mode = c.attr_s("mode", "nearest");
  if (spec.mode != "nearest" && spec.mode != "linear" && spec.mode != "cubic" &&
      spec.mode != "bilinear")
    c.fail("mode \"" + spec.mode + "\" is not nearest, linear or cubic");
  if (spec.mode == "bilinear") spec.mode = "linear";
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (upsample || c.opset() < 11) {
    spec.transform = "asymmetric";
    spec.nearest = "floor";
    if (c.opset() < 9 && upsample)
      scales = c.attr_floats("scales");
    else
      scales = c.floats(1);
  } else {
    spec.transform = c.attr_s("coordinate_transformation_mode", "half_pixel");
    spec.nearest = c.attr_s("nearest_mode", "round_prefer_floor");
    spec.cubic_a = c.attr_f("cubic_coeff_a", -0.75);
    spec.exclude_outside = c.attr_i("exclude_outside", 0) != 0;
    spec.extrapolation = c.attr_f("extrapolation_value", 0.0);
    if (c.has_attr("antialias") && c.attr_i("antialias", 0) != 0)
      c.fail("antialias is not supported");
    if (c.has_attr("axes")) c.fail("the axes attribute is not supported");
    if (c.has(1)) roi = c.floats(1);
    if (c.has(2)) scales = c.floats(2);
    if (c.has(3)) sizes = c.ints(3);
  }
  if (!sizes.empty() && static_cast<int64_t>(sizes.size()) != r)
    c.fail("sizes needs " + std::to_string(r) + " entries");
  if (sizes.empty() && static_cast<int64_t>(scales.size()) != r)
    c.fail("scales needs " + std::to_string(r) + " entries (or give sizes)");
  if (spec.transform == "tf_crop_and_resize" && static_cast<int64_t>(roi.size()) != 2 * r)
    c.fail("tf_crop_and_resize needs roi with " + std::to_string(2 * r) + " entries");
  const bool numeric = is_float(x.dtype());
  const DType t = x.dtype();
  if (!numeric) x = x.cast(DType::F32);
  for (int64_t a = r - 1; a >= 0; --a) {
    const int64_t in = x.shape()[static_cast<size_t>(a)];
    int64_t out;
    double scale;
    if (!sizes.empty()) {
      out = sizes[static_cast<size_t>(a)];
      scale = static_cast<double>(out) / static_cast<double>(in);
    } else {
      scale = scales[static_cast<size_t>(a)];
      if (!(scale > 0)) c.fail("scales must be > 0");
      out = static_cast<int64_t>(std::floor(static_cast<double>(in) * scale));
    }
    if (out < 0) c.fail("a negative output size");
    const bool crop = spec.transform == "tf_crop_and_resize";
    if (out == in && scale == 1.0 && !crop) continue;
    x = resize_axis(c, x, a, out, scale, spec, crop ? roi[static_cast<size_t>(a)] : 0,
                    crop ? roi[static_cast<size_t>(a + r)] : 1);
  }
  if (!numeric) x = x.unary(OpCode::Round).cast(t);
  return {RValue<B>::of(x)};
}

}  // namespace

template <Backend B>
void register_resize_ops(OpRegistry<B>& r) {
  r["Resize"] = resize<B>;
  r["Upsample"] = resize<B>;
}

template void register_resize_ops<Dispatch>(OpRegistry<Dispatch>&);
template void register_resize_ops<Autodiff<Dispatch>>(OpRegistry<Autodiff<Dispatch>>&);

}  // namespace ember::onnx::detail
