// cuda_bench: ember's CUDA backend on the figures of the PyTorch GPU peer
// (bench/peer_torch_cuda.py, same names and sizes): device copy, matmul f32 / tf32 / bf16 / f16,
// softmax, sum, elementwise add and a 6-op chain, the eager overhead of a tiny op, and conv2d
// (forward, and forward + backward) in f32 and TF32. Each is
// warmed up, then timed `reps` times between two CUDA events on the backend's stream; the
// figure is the median. Run by scripts/bench.sh cuda (or bundle/bench.sh on a GPU machine),
// which runs the peer beside it and prints the ratios (bench/cuda_report.py).
//
//   cuda_bench [--reps N] [--warmup N] [--filter SUBSTRING] [--json FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/flags.h"
#include "ember/backend/apply.h"
#include "ember/backends/cuda/cuda.h"
#include "ember/backends/cuda/runtime.h"
#include "ember/backends/gpu/ops.h"
#include "ember/core/error.h"
#include "ember/ember.h"
#include "ember/kernel/kernels/elementwise.h"

using namespace ember;
using H = CudaTensor;

namespace {

const Device kGpu{DeviceKind::Cuda, 0};

struct Options {
  int reps = 30, warmup = 5;
  std::string filter, json;
};

struct Record {
  std::string name;  // the peer's name for the figure
  double ms;         // median per call
  std::string unit;  // "TFLOP/s", "GB/s", "us/op" or "ms"
  double value;      // the figure in that unit
};

H run(Op op, std::vector<H> in) {
  return apply<Cuda>(std::move(op), std::span<H>(in.data(), in.size()));
}
H make(OpCode c, Dims shape, DType t, double a = 0, double b = 1) {
  Op op{c, {}};
  op.attrs.shape = std::move(shape);
  op.attrs.scalar = a;
  op.attrs.scalar2 = b;
  op.attrs.dtype = t;
  op.attrs.seed = 42;
  return apply<Cuda>(std::move(op), std::span<H>(), kGpu);
}
H randn(Dims shape, DType t = DType::F32) { return make(OpCode::RandomNormal, shape, t); }
H scalar(double v) { return make(OpCode::Full, {}, DType::F32, v); }
H binary(OpCode c, const H& a, const H& b) { return run(Op{c, {}}, {a, b}); }
H unary(OpCode c, const H& a) { return run(Op{c, {}}, {a}); }

// Median milliseconds of fn() between two events on the device's stream.
double time_ms(const Options& o, int reps, const std::function<void()>& fn) {
  cuda::detail::DeviceState& d = cuda::detail::device(0);
  for (int i = 0; i < o.warmup; ++i) fn();
  cuda::synchronize(0);
  std::vector<double> ts;
  cuda::Event start, end;
  for (int i = 0; i < reps; ++i) {
    start.record_raw(d.s());
    fn();
    end.record_raw(d.s());
    end.synchronize();
    ts.push_back(end.since(start));
  }
  std::sort(ts.begin(), ts.end());
  size_t n = ts.size();
  return n % 2 ? ts[n / 2] : (ts[n / 2 - 1] + ts[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  auto f = bench::parse_flags(argc, argv, {"--reps", "--warmup", "--filter", "--json"},
                              "usage: cuda_bench [--reps N] [--warmup N] [--filter S] [--json F]");
  if (f.count("--reps")) o.reps = std::stoi(f["--reps"]);
  if (f.count("--warmup")) o.warmup = std::stoi(f["--warmup"]);
  o.filter = f["--filter"];
  o.json = f["--json"];
  std::string why;
  if (!cuda::available(&why)) {
    std::fprintf(stderr, "cuda_bench: no CUDA GPU: %s\n", why.c_str());
    return 1;
  }
  cuda::DeviceInfo info = cuda::device_info(0);
  std::printf("cuda_bench: %s (sm_%d, %d SMs), %d reps after %d warm-up\n", info.name.c_str(),
              info.arch(), info.multiprocessors, o.reps, o.warmup);
  std::vector<Record> records;
  auto want = [&](const std::string& name) {
    return o.filter.empty() || name.find(o.filter) != std::string::npos;
  };
  auto put = [&](std::string name, double ms, std::string unit, double value) {
    std::printf("%-44s %10.4f ms %12.2f %s\n", name.c_str(), ms, value, unit.c_str());
    std::fflush(stdout);
    records.push_back({std::move(name), ms, std::move(unit), value});
  };
  auto gbps = [](double bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; };

  try {
    // 1. Device copy: the backend's copy of a dense tensor (copy_strided, what an op that
    // must copy its input runs: the driver's copy for dense data), and the raw memcpy.
    if (want("copy_GBps(read+write)")) {
      H x = randn({int64_t(1) << 28});
      double bytes = 2.0 * (int64_t(1) << 28) * 4;
      double ms = time_ms(o, o.reps, [&] { H y = gpu::copy_strided(x); });
      put("copy_GBps(read+write)", ms, "GB/s", gbps(bytes, ms));
      H y = gpu::copy_strided(x);
      cuda::detail::DeviceState& d = cuda::detail::device(0);
      ms = time_ms(o, o.reps,
                   [&] { cuda::raw::copy_dtod(y.ptr(), x.ptr(), size_t(bytes / 2), d.s()); });
      put("memcpy_dtod_GBps(read+write)", ms, "GB/s", gbps(bytes, ms));
    }
    // 2. Matmul: 2 n^3 flop.
    for (int64_t n : {4096, 8192})
      for (const char* kind : {"fp32", "tf32", "bf16", "fp16"}) {
        std::string name = "matmul_" + std::to_string(n) + "_" + kind + "_TFLOPs";
        if (!want(name)) continue;
        cuda::set_allow_tf32(std::strcmp(kind, "tf32") == 0);
        DType t = std::strcmp(kind, "bf16") == 0   ? DType::BF16
                  : std::strcmp(kind, "fp16") == 0 ? DType::F16
                                                   : DType::F32;
        H a = randn({n, n}, t), b = randn({n, n}, t);
        double ms =
            time_ms(o, std::max(3, o.reps / 3), [&] { H c = binary(OpCode::Matmul, a, b); });
        put(name, ms, "TFLOP/s", 2.0 * n * n * n / (ms * 1e-3) / 1e12);
      }
    cuda::set_allow_tf32(false);
    // 3. Elementwise: a + b on 64M f32, and the peer's 6-op chain
    // gelu(a * b + c).exp() * 0.5 + a, tanh (gelu decomposes into its primitives here).
    {
      int64_t n = int64_t(1) << 26;
      if (want("add_64M_GBps") || want("chain6_64M_eager_ms")) {
        H a = randn({n}), b = randn({n}), c = randn({n}), half = scalar(0.5);
        if (want("add_64M_GBps")) {
          double ms = time_ms(o, o.reps, [&] { H y = binary(OpCode::Add, a, b); });
          put("add_64M_GBps", ms, "GB/s", gbps(3.0 * n * 4, ms));
        }
        if (want("chain6_64M_eager_ms")) {
          double ms = time_ms(o, o.reps, [&] {
            H t = binary(OpCode::Add, binary(OpCode::Mul, a, b), c);
            t = unary(OpCode::Exp, unary(OpCode::Gelu, t));
            t = unary(OpCode::Tanh, binary(OpCode::Add, binary(OpCode::Mul, t, half), a));
          });
          put("chain6_64M_eager_ms", ms, "ms", ms);
        }
      }
    }
    // 4. Eager overhead: 100 dependent adds of a scalar to 16 elements.
    if (want("tiny_add_us_per_op_eager")) {
      H t = randn({16}), one = scalar(1.0);
      double ms = time_ms(o, o.reps, [&] {
        H z = t;
        for (int i = 0; i < 100; ++i) z = binary(OpCode::Add, z, one);
      });
      put("tiny_add_us_per_op_eager", ms, "us/op", ms * 1000 / 100);
    }
    // The same through what a user writes (Tensor<Dispatch>: apply, Dispatch, the backend), and
    // where the time goes: the host's time per op for 10000 adds submitted at once, and the
    // floor of the driver and the GPU, the add's own kernel launched 10000 times with its
    // arguments packed once (cuLaunchKernel and the kernel, nothing of ember).
    if (want("tiny_add_us_per_op_tensor")) {
      auto t = Tensor<Dispatch, 1>::random({16}, Distribution::normal(0, 1), kGpu);
      double ms = time_ms(o, o.reps, [&] {
        auto z = t;
        for (int i = 0; i < 100; ++i) z = z + 1.0;
      });
      put("tiny_add_us_per_op_tensor", ms, "us/op", ms * 1000 / 100);
    }
    if (want("tiny_add_host_us_per_op")) {
      H t = randn({16}), one = scalar(1.0);
      H z = binary(OpCode::Add, t, one);
      cuda::synchronize(0);
      std::vector<double> us;
      for (int r = 0; r < 5; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < 10000; ++i) z = binary(OpCode::Add, z, one);
        auto t1 = std::chrono::steady_clock::now();
        cuda::synchronize(0);
        auto t2 = std::chrono::steady_clock::now();
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / 10000);
        std::printf("%-44s %10s    submit %.2f us/op, with the sync %.2f us/op\n",
                    "  (host, 10000 adds)", "", us.back(),
                    std::chrono::duration<double, std::micro>(t2 - t0).count() / 10000);
      }
      std::sort(us.begin(), us.end());
      put("tiny_add_host_us_per_op", us[2] * 1e-3, "us/op", us[2]);
      // Where the host's time goes, piece by piece (100000 times each, no launch): the op's
      // validation and shape rule, an output from the pool and back, the kernel map's lookup.
      auto host_us = [](const auto& fn) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < 100000; ++i) fn();
        return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                   .count() /
               100000;
      };
      const TensorMeta* metas[2] = {&z.meta, &one.meta};
      double t_infer = host_us([&] {
        Op add{OpCode::Add, {}};
        TensorMeta m = infer(add, std::span<const TensorMeta* const>(metas, 2));
        (void)m;
      });
      double t_alloc = host_us([&] { H e = gpu::empty(z.meta, cuda::detail::device(0)); });
      cuda::detail::DeviceState& dev0 = cuda::detail::device(0);
      double t_find = host_us([&] { (void)dev0.find(0x1234); });
      std::printf(
          "%-44s %10s    infer %.3f us, output from the pool and back %.3f us, kernel "
          "map %.3f us\n",
          "  (host pieces of one op)", "", t_infer, t_alloc, t_find);
      // The floor: the backend's kernel for a dense f32 add (the key elementwise.cpp gives it).
      cuda::detail::DeviceState& d = cuda::detail::device(0);
      using cuda::detail::Kind;
      const cuda::detail::Loaded& l = gpu::kernel_for(
          d, gpu::key(Kind::Elementwise, int(OpCode::Add), DType::F32, DType::F32, 1, true), [] {
            kernel::ElementwiseSpec es;
            es.contiguous = true;
            return kernel::elementwise_kernel(es);
          });
      {
        H u = randn({16});
        cuda::detail::Args a(l);
        a.ptr(u.ptr()).ptr(u.ptr()).ptr(u.ptr()).i(16);
        double ms = time_ms(o, o.reps, [&] {
          for (int i = 0; i < 100; ++i) a.launch(d, 1);
        });
        put("launch_floor_us_per_op", ms, "us/op", ms * 1000 / 100);
      }
    }
    // 5. Softmax over the last dim, and a sum of 256M f32.
    if (want("softmax_8192x4096_ms")) {
      H m = randn({8192, 4096});
      Op sm{OpCode::Softmax, {}};
      sm.attrs.dim = 1;
      double ms = time_ms(o, o.reps, [&] { H y = run(sm, {m}); });
      put("softmax_8192x4096_ms", ms, "ms", ms);
      std::printf("%-44s %10s    %12.2f GB/s\n", "  (softmax read + write)", "",
                  gbps(2.0 * 8192 * 4096 * 4, ms));
    }
    if (want("layernorm_8192x4096_ms")) {
      auto x = Tensor<Dispatch, 2>::random({8192, 4096}, Distribution::normal(0, 1), kGpu);
      auto g = Tensor<Dispatch, 1>::ones({4096}, kGpu),
           b = Tensor<Dispatch, 1>::zeros({4096}, kGpu);
      double ms = time_ms(o, o.reps, [&] { auto y = layer_norm(x, g, b); });
      put("layernorm_8192x4096_ms", ms, "ms", ms);
      std::printf("%-44s %10s    %12.2f GB/s\n", "  (layer norm read + write)", "",
                  gbps(2.0 * 8192 * 4096 * 4, ms));
    }
    if (want("sum_256M_ms")) {
      H x = randn({int64_t(1) << 28});
      double ms = time_ms(o, o.reps, [&] { H y = run(Op{OpCode::Sum, {}}, {x}); });
      put("sum_256M_ms", ms, "ms", ms);
      std::printf("%-44s %10s    %12.2f GB/s\n", "  (sum read)", "",
                  gbps((int64_t(1) << 28) * 4.0, ms));
    }
    // 6. conv2d: x [64, 128, 56, 56], w [128, 128, 3, 3], padding 1, no bias, 2 N C_out H W
    // C_in 9 flop, strict f32 and with TF32; forward + backward adds the input gradient
    // (conv_transpose) and the weight gradient (conv_weight_grad), three times the flop.
    for (const char* kind : {"fp32", "tf32"}) {
      std::string fwd = std::string("conv2d_64x128x56x56_k3_") + kind + "_TFLOPs";
      std::string both = std::string("conv2d_64x128x56x56_k3_") + kind + "_fwdbwd_TFLOPs";
      if (!want(fwd) && !want(both)) continue;
      cuda::set_allow_tf32(std::strcmp(kind, "tf32") == 0);
      const double flops = 2.0 * 64 * 128 * 56 * 56 * 128 * 9;
      H x = randn({64, 128, 56, 56}), w = randn({128, 128, 3, 3});
      Window win;
      win.kernel = {3, 3};
      win.padding = {1, 1};
      auto conv_op = [&](OpCode c) {
        Op op{c, {}};
        op.attrs.window = win;
        return op;
      };
      Op conv = conv_op(OpCode::Conv), dx = conv_op(OpCode::ConvTranspose),
         dw = conv_op(OpCode::ConvWeightGrad);
      if (want(fwd)) {
        double ms = time_ms(o, o.reps, [&] { H y = run(conv, {x, w}); });
        put(fwd, ms, "TFLOP/s", flops / (ms * 1e-3) / 1e12);
      }
      if (want(both)) {
        H gy = randn({64, 128, 56, 56});
        double ms = time_ms(o, o.reps, [&] {
          H y = run(conv, {x, w});
          H gx = run(dx, {gy, w});
          H gw = run(dw, {x, gy});
        });
        put(both, ms, "TFLOP/s", 3 * flops / (ms * 1e-3) / 1e12);
      }
    }
    cuda::set_allow_tf32(false);
    if (want("conv2d")) {
      std::string why;
      int v = cuda::cudnn_version(&why);
      std::string path = v ? "cuDNN " + std::to_string(v) : "unfold + GEMM (" + why + ")";
      std::printf("%-44s %s\n", "  (conv2d through)", path.c_str());
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "cuda_bench: %s\n", e.what());
    return 1;
  }

  if (!o.json.empty()) {
    FILE* f = std::fopen(o.json.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "cuda_bench: cannot write %s\n", o.json.c_str());
      return 1;
    }
    std::fprintf(f, "{\"gpu\": \"%s\", \"results\": [\n", info.name.c_str());
    for (size_t i = 0; i < records.size(); ++i)
      std::fprintf(f, "  {\"name\": \"%s\", \"ms\": %.6g, \"unit\": \"%s\", \"value\": %.6g}%s\n",
                   records[i].name.c_str(), records[i].ms, records[i].unit.c_str(),
                   records[i].value, i + 1 < records.size() ? "," : "");
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return 0;
}
