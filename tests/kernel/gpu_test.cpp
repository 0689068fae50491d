// The kernel layer's kernels on a GPU: compiled with NVRTC, launched through the driver and
// compared element-wise with the CPU backend on random inputs (non-contiguous, broadcast,
// zero-size). Without a CUDA driver or GPU every test skips, saying so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "ember/core/error.h"
#include "ember/kernel/kernels/elementwise.h"
#include "ember/kernel/kernels/reduce.h"
#include "gpu_fixture.h"

using namespace ember;

namespace {

using kernel_test::View;

class Gpu : public kernel_test::KernelGpu {
 protected:
  Gpu() : KernelGpu(1234) {}

  // Random values of `t` (ints in [-20, 20], or [1, 9] with a random sign when nonzero).
  TensorData random(DType t, int64_t n, bool nonzero = false) {
    std::vector<float> v(n);
    std::uniform_real_distribution<float> f(-3, 3);
    std::uniform_int_distribution<int> i(-20, 20), nz(1, 9), sign(0, 1);
    for (auto& x : v) {
      if (t == DType::Bool)
        x = static_cast<float>(sign(rng_));
      else if (is_float(t))
        x = f(rng_);
      else if (nonzero)
        x = static_cast<float>(nz(rng_) * (sign(rng_) ? 1 : -1));
      else
        x = static_cast<float>(i(rng_));
      if (t == DType::U8) x = std::abs(x);
    }
    return TensorData::from<float>(v, Shape{n}).convert(t);
  }

  // A view with `shape` over storage of `storage` elements, with these strides and offset.
  View view(DType t, Shape shape, Dims strides, int64_t offset, int64_t storage,
            bool nonzero = false) {
    return view_of(random(t, std::max<int64_t>(storage, 1), nonzero), shape, strides, offset);
  }
  View dense(DType t, Shape shape, bool nonzero = false) {
    return view(t, shape, contiguous_strides(shape), 0, shape.numel(), nonzero);
  }
  // The view's strides against the output `shape` (0 along broadcast dims).
  static Dims broadcast_strides(const CpuTensor& t, const Shape& shape) {
    size_t off = shape.rank() - t.meta.shape.rank();
    Dims st(shape.rank(), 0);
    for (size_t i = 0; i < t.meta.shape.rank(); ++i)
      st[off + i] = t.meta.shape[i] == 1 ? 0 : t.strides[i];
    return st;
  }
  // Runs the elementwise kernel of `op` on the views and compares with Cpu::run.
  void elementwise(OpCode op, std::vector<View> in, const std::string& what) {
    Op o{op, {}};
    std::vector<TensorMeta> metas;
    for (const View& v : in) metas.push_back(v.cpu.meta);
    std::vector<const TensorMeta*> mp;
    for (const auto& m : metas) mp.push_back(&m);
    TensorMeta out = infer(o, mp);
    std::vector<CpuTensor> hs;
    for (const View& v : in) hs.push_back(v.cpu);
    TensorData expect = Cpu::to_data(Cpu::run(o, hs, out, Device::cpu()));

    const Shape& s = out.shape;
    int64_t n = s.numel();
    int w = kernel::vector_width(in[0].cpu.meta.dtype);
    bool dense = true;
    for (const View& v : in)
      dense = dense && v.cpu.meta.shape == s && v.cpu.is_contiguous() && v.ptr() % 16 == 0;
    kernel::ElementwiseSpec spec{op, in[0].cpu.meta.dtype};
    spec.rank = std::max<int>(1, static_cast<int>(s.rank()));
    spec.contiguous = dense;
    kernel::Kernel k = kernel::elementwise_kernel(spec);
    kernel::default_pipeline().run(k);
    cuda::Module m(kernel::compile_cuda(k, options()));
    cuda::DeviceBuffer o_dev(std::max<size_t>(expect.bytes().size(), 1));
    cuda::LaunchArgs args(k);
    for (const View& v : in) args.buffer(v.ptr());
    args.buffer(o_dev.ptr()).scalar_int(n);
    if (!dense) {
      for (size_t d = 0; d < s.rank(); ++d) args.scalar_int(s[d]);
      if (s.rank() == 0) args.scalar_int(1);
      for (const View& v : in) {
        Dims st = broadcast_strides(v.cpu, s);
        for (size_t d = 0; d < s.rank(); ++d) args.scalar_int(st[d]);
        if (s.rank() == 0) args.scalar_int(0);
      }
    }
    int64_t work = dense ? (n + w - 1) / w : n;
    m.launch(k, std::min<int64_t>((work + 255) / 256, 4096), args);
    ctx_->synchronize();
    TensorData got(s, out.dtype);
    o_dev.download(got.bytes().data(), got.bytes().size());
    expect_close(got, expect, what + " (" + k.name + ")");
  }
};

}  // namespace

TEST_F(Gpu, UnaryOpsMatchTheCpuBackend) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64})
    for (OpCode op :
         {OpCode::Exp, OpCode::Neg, OpCode::Sigmoid, OpCode::Tanh, OpCode::Floor, OpCode::Abs}) {
      std::string what = std::string(name(op)) + " " + std::string(name(t));
      elementwise(op, {dense(t, Shape{1000})}, what + " dense");
      // A transpose: [33, 17] with strides (1, 33), offset into a larger buffer.
      elementwise(op, {view(t, Shape{33, 17}, Dims{1, 33}, 5, 5 + 33 * 17)}, what + " transposed");
      elementwise(op, {dense(t, Shape{0, 5})}, what + " zero-size");
    }
}

TEST_F(Gpu, BinaryOpsBroadcastOverAnyStrides) {
  for (DType t : {DType::F32, DType::F16, DType::I32, DType::I64})
    for (OpCode op : {OpCode::Add, OpCode::Mul, OpCode::Maximum, OpCode::Remainder, OpCode::Less}) {
      std::string what = std::string(name(op)) + " " + std::string(name(t));
      elementwise(op, {dense(t, Shape{1027}), dense(t, Shape{1027}, true)}, what + " dense");
      elementwise(op, {dense(t, Shape{4, 1, 5}), dense(t, Shape{3, 1}, true)}, what + " broadcast");
      elementwise(op, {view(t, Shape{6, 7}, Dims{1, 6}, 0, 42), dense(t, Shape{7}, true)},
                  what + " transposed + broadcast");
      elementwise(op, {dense(t, Shape{0, 3}), dense(t, Shape{3}, true)}, what + " zero-size");
    }
}

TEST_F(Gpu, ReductionsMatchTheCpuBackend) {
  for (DType t : {DType::F32, DType::BF16, DType::I32, DType::F64})
    for (OpCode op : {OpCode::Sum, OpCode::Max, OpCode::Min})
      for (bool permuted : {false, true}) {
        // x [7, 300, 5] (or a permuted view of the same shape), reduced along dim 1.
        Shape s{7, 300, 5};
        View x = permuted ? view(t, s, Dims{1, 35, 7}, 0, 7 * 300 * 5) : dense(t, s);
        Op o{op, {}};
        o.attrs.dims = {1};
        const TensorMeta* mp[] = {&x.cpu.meta};
        TensorMeta out = infer(o, mp);
        std::vector<CpuTensor> hs{x.cpu};
        TensorData expect = Cpu::to_data(Cpu::run(o, hs, out, Device::cpu()));
        kernel::Kernel k = kernel::reduce_kernel({op, t});
        kernel::default_pipeline().run(k);
        cuda::Module m(kernel::compile_cuda(k, options()));
        cuda::DeviceBuffer o_dev(expect.bytes().size());
        cuda::LaunchArgs args(k);
        args.buffer(x.ptr()).buffer(o_dev.ptr());
        args.scalar_int(7).scalar_int(300).scalar_int(5);
        for (int64_t st : x.cpu.strides) args.scalar_int(st);
        m.launch(k, 35, args);
        ctx_->synchronize();
        TensorData got(out.shape, t);
        o_dev.download(got.bytes().data(), got.bytes().size());
        expect_close(
            got, expect,
            std::string(name(op)) + " " + std::string(name(t)) + (permuted ? " permuted" : ""),
            t == DType::F32 ? 1e-4 : -1);
      }
}

TEST(GpuDriver, ReportsAMissingDriverCleanly) {
  std::string why;
  if (cuda::available(&why)) GTEST_SKIP() << "a CUDA GPU is present";
  EXPECT_FALSE(why.empty());
  try {
    cuda::device_count();
    // A driver without devices: device_count works and says 0.
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("[cuda] no CUDA"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cuda::DeviceBuffer(16), DeviceError);
}
