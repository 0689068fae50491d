#include "ember/nn/init.h"

#include "ember/core/rng.h"

namespace ember::nn {

TensorData Initializer::orthogonal_data(const Shape& shape, double gain) {
  if (shape.rank() < 2)
    throw ShapeError("[init] orthogonal needs rank >= 2, got " + shape.to_string());
  const int64_t rows = shape[0], cols = rows == 0 ? 0 : shape.numel() / rows;
  const bool wide = rows < cols;
  const int64_t n = wide ? cols : rows, k = wide ? rows : cols;  // n x k, n >= k
  const uint64_t seed = next_seed();
  std::vector<double> q(static_cast<size_t>(n * k));  // column j at q[j * n ...]
  for (size_t i = 0; i < q.size(); ++i) q[i] = rng::normal(seed, i);
  for (int64_t j = 0; j < k; ++j) {
    double* cj = &q[static_cast<size_t>(j * n)];
    for (int64_t p = 0; p < j; ++p) {
      const double* cp = &q[static_cast<size_t>(p * n)];
      double dot = 0;
      for (int64_t i = 0; i < n; ++i) dot += cp[i] * cj[i];
      for (int64_t i = 0; i < n; ++i) cj[i] -= dot * cp[i];
    }
    double norm = 0;
    for (int64_t i = 0; i < n; ++i) norm += cj[i] * cj[i];
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < n; ++i) cj[i] /= norm;  // R's diagonal is positive here
  }
  std::vector<double> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[static_cast<size_t>(r * cols + c)] =
          gain * (wide ? q[static_cast<size_t>(r * n + c)] : q[static_cast<size_t>(c * n + r)]);
  return TensorData::from<double>(out, shape);
}

}  // namespace ember::nn
