// PyTorch-like tensor text. Long dims are summarized with "..." (3 items each side).
#include <cmath>
#include <cstdio>
#include <functional>

#include "ember/core/tensor_data.h"

namespace ember {

namespace {

constexpr int64_t kSummarizeAbove = 1000;
constexpr int64_t kEdgeItems = 3;

struct Formatter {
  std::vector<double> v;
  bool floating = false, integral_values = true, sci = false;
  bool is_bool = false;

  std::string one(double x) const {
    char buf[64];
    if (is_bool) return x != 0 ? "True" : "False";
    if (!floating) {
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(x));
    } else if (std::isnan(x)) {
      return "nan";
    } else if (std::isinf(x)) {
      return x > 0 ? "inf" : "-inf";
    } else if (sci) {
      std::snprintf(buf, sizeof buf, "%.4e", x);
    } else if (integral_values) {
      std::snprintf(buf, sizeof buf, "%.0f.", x);
    } else {
      std::snprintf(buf, sizeof buf, "%.4f", x);
    }
    return buf;
  }
};

}  // namespace

std::string format_tensor(const TensorData& d, std::string_view device) {
  Formatter f;
  f.v = d.to_vec<double>();
  f.floating = is_float(d.dtype());
  f.is_bool = is_bool(d.dtype());
  double maxabs = 0, minabs = INFINITY;
  for (double x : f.v) {
    if (!std::isfinite(x)) continue;
    if (x != std::floor(x)) f.integral_values = false;
    maxabs = std::max(maxabs, std::abs(x));
    if (x != 0) minabs = std::min(minabs, std::abs(x));
  }
  f.sci = f.floating && (maxabs >= 1e8 || (minabs < 1e-4 && !f.integral_values));
  size_t width = 0;
  for (double x : f.v) width = std::max(width, f.one(x).size());

  const Shape& s = d.shape();
  bool summarize = d.numel() > kSummarizeAbove;
  Dims strides = contiguous_strides(s);
  std::string out = "tensor(";
  const std::string indent = "       ";
  std::function<void(size_t, int64_t)> rec = [&](size_t dim, int64_t off) {
    if (dim == s.rank()) {
      std::string t = f.one(f.v[off]);
      out += std::string(width - t.size(), ' ') + t;
      return;
    }
    out += "[";
    int64_t n = s[dim];
    for (int64_t i = 0; i < n; ++i) {
      if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
        out += dim + 1 == s.rank() ? "..., " : "...,\n" + indent + std::string(dim + 1, ' ');
        i = n - kEdgeItems - 1;
        continue;
      }
      rec(dim + 1, off + i * strides[dim]);
      if (i + 1 < n) {
        if (dim + 1 == s.rank()) {
          out += ", ";
        } else {
          out.append(",").append(s.rank() - dim - 1, '\n').append(indent).append(dim + 1, ' ');
        }
      }
    }
    out += "]";
  };
  rec(0, 0);
  out += ", shape=" + s.to_string() + ", dtype=" + std::string(name(d.dtype()));
  if (device != "cpu") out += ", device=" + std::string(device);
  return out + ")";
}

}  // namespace ember
