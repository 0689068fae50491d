// What the CUDA backend's test files share: the fixture (skips without a driver or GPU),
// random inputs, layouts that give non-contiguous views, and the comparison of one op on the
// CPU and the GPU backends.
#pragma once
#include <gtest/gtest.h>

#include <random>

#include "ember/backend/apply.h"
#include "ember/backend/dispatch.h"
#include "ember/backends/cuda/cuda.h"
#include "ember/core/error.h"
#include "ember/tensor/tensor.h"

namespace ember::cuda_test {

using H = DispatchHandle;
inline const Device kGpu{DeviceKind::Cuda, 0};

class CudaBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::available(&why)) GTEST_SKIP() << "no CUDA driver/GPU: skipped (" << why << ")";
  }
  std::mt19937 rng_{42};

  TensorData random(Shape s, DType t, double lo = -3, double hi = 3) {
    std::vector<double> v(s.numel());
    std::uniform_real_distribution<double> f(lo, hi);
    std::uniform_int_distribution<int> i{int(lo), int(hi)}, b{0, 1};
    for (auto& x : v) x = t == DType::Bool ? b(rng_) : is_float(t) ? f(rng_) : i(rng_);
    return TensorData::from<double>(v, s).convert(t);
  }
};

inline H on(const TensorData& d, Device dev) { return Dispatch::from_data(d, dev); }
inline H run(Op op, std::vector<H> in, Device dev) {
  return in.empty() ? apply<Dispatch>(std::move(op), std::span<H>(), dev)
                    : apply<Dispatch>(std::move(op), std::span<H>(in));
}
inline H view(H h, const Op& op) { return run(op, {std::move(h)}, Dispatch::device(h)); }

inline Op permute(Dims d) {
  Op o{OpCode::Permute, {}};
  o.attrs.dims = std::move(d);
  return o;
}
inline Op flip(Dims d) {
  Op o{OpCode::Flip, {}};
  o.attrs.dims = std::move(d);
  return o;
}
inline Op slice(Dims starts, Dims ends, Dims steps) {
  Op o{OpCode::Slice, {}};
  o.attrs.dims = std::move(starts);
  o.attrs.ends = std::move(ends);
  o.attrs.steps = std::move(steps);
  return o;
}
inline Op expand(Shape s) {
  Op o{OpCode::Expand, {}};
  o.attrs.shape = s.dims();
  return o;
}

inline double tol(DType t) {
  return t == DType::F16 || t == DType::BF16 ? 2e-2 : t == DType::F64 ? 1e-12 : 2e-5;
}

// The same op on the same inputs, on the CPU and the GPU, with each input transformed by
// `layout` (a chain of views) first.
inline void expect_same(const Op& op, const std::vector<TensorData>& in,
                        const std::vector<std::vector<Op>>& layout, double rtol, double atol,
                        const std::string& what) {
  std::vector<H> c, g;
  for (size_t i = 0; i < in.size(); ++i) {
    H hc = on(in[i], Device::cpu()), hg = on(in[i], kGpu);
    if (i < layout.size())
      for (const Op& v : layout[i]) {
        hc = view(hc, v);
        hg = view(hg, v);
      }
    c.push_back(hc);
    g.push_back(hg);
  }
  TensorData want = Dispatch::to_data(run(op, c, Device::cpu()));
  TensorData got = Dispatch::to_data(run(op, g, kGpu));
  std::string why;
  EXPECT_EQ(got.dtype(), want.dtype()) << what;
  EXPECT_TRUE(got.all_close(want, rtol, atol, &why))
      << what << ": " << why << "\n got " << format_tensor(got) << "\nwant " << format_tensor(want);
}

// Layouts that give a [4, 6, 5] tensor: dense, permuted, sliced with steps, flipped,
// broadcast; `in` is the shape of the tensor the views start from.
struct Layout {
  std::string name;
  Shape in;
  std::vector<Op> ops;
};
inline std::vector<Layout> layouts() {
  return {{"dense", {4, 6, 5}, {}},
          {"permuted", {5, 4, 6}, {permute({1, 2, 0})}},
          {"sliced", {5, 12, 11}, {slice({1, 0, 1}, {5, 12, 11}, {1, 2, 2})}},
          {"flipped", {4, 6, 5}, {flip({0, 2})}},
          {"broadcast", {4, 6, 5}, {slice({0, 0, 0}, {4, 1, 5}, {1, 1, 1}), expand({4, 6, 5})}}};
}

inline const OpCode kFloatUnary[] = {
    OpCode::Neg,   OpCode::Abs,   OpCode::Sign,    OpCode::Exp,   OpCode::Log,  OpCode::Log2,
    OpCode::Sqrt,  OpCode::Rsqrt, OpCode::Recip,   OpCode::Sin,   OpCode::Cos,  OpCode::Tan,
    OpCode::Tanh,  OpCode::Erf,   OpCode::Sigmoid, OpCode::Floor, OpCode::Ceil, OpCode::Round,
    OpCode::Trunc, OpCode::IsNan, OpCode::IsInf};

}  // namespace ember::cuda_test
