// vulkan_bench: the kernel layer's kernels on the first Vulkan device, on the figures of the
// CUDA backend's bench (bench/cuda_bench.cpp, same names and sizes): elementwise add and a
// dense and strided copies (GB/s), the 6-op fused chain, softmax 8192 x 4096 and a sum of 256M
// floats. Each is warmed up, then `reps` launches are recorded and submitted at once; the figure is
// the time per launch between two GPU timestamps around them (the wall time where the queue
// writes none): the queue runs them back to back, as a CUDA stream does.
// Then softmax, the sum and the matmul once more as ops of the Vulkan backend (its kernels and
// launch parameters; wall time of a batch of ops). Run together with cuda_bench
// (scripts/gpu_bundle.sh's bench_vulkan.sh) to compare.
//
//   vulkan_bench [--reps N] [--scale S]   # S < 1 shrinks the sizes (lavapipe)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/flags.h"
#include "ember/backend/apply.h"
#include "ember/backends/vulkan/gemm.h"
#include "ember/backends/vulkan/vulkan.h"
#include "ember/core/error.h"
#include "ember/kernel/kernels/copy.h"
#include "ember/kernel/kernels/elementwise.h"
#include "ember/kernel/kernels/fused.h"
#include "ember/kernel/kernels/matmul.h"
#include "ember/kernel/kernels/reduce.h"
#include "ember/kernel/kernels/softmax.h"
#include "ember/kernel/passes.h"

using namespace ember;
using vulkan::Arg;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

kernel::Kernel optimized(kernel::Kernel k) {
  kernel::default_pipeline().run(k);
  return k;
}

uint32_t groups(int64_t items, int64_t per_group) {
  return uint32_t(std::min<int64_t>((items + per_group - 1) / per_group, 65535));
}

}  // namespace

int main(int argc, char** argv) {
  auto f = bench::parse_flags(argc, argv, {"--reps", "--scale"},
                              "usage: vulkan_bench [--reps N] [--scale S]");
  int reps = f.count("--reps") ? std::stoi(f["--reps"]) : 20;
  double scale = f.count("--scale") ? std::stod(f["--scale"]) : 1.0;
  std::string why;
  if (!vulkan::available(&why)) {
    std::fprintf(stderr, "vulkan_bench: no Vulkan device: %s\n", why.c_str());
    return 1;
  }
  try {
    vulkan::Context& ctx = vulkan::context(0);
    const vulkan::DeviceInfo& d = ctx.info();
    std::printf("device: %s (%s), subgroup %u\n", d.name.c_str(), d.type.c_str(), d.subgroup_size);
    // ms per call of `run` (which records its launches): between two GPU timestamps around
    // `reps` calls in one batch, or the wall time of the batch where there are none.
    bool stamps = true;
    auto time_ms = [&](const std::function<void()>& run) {
      for (int i = 0; i < 3; ++i) run();
      ctx.synchronize();
      if (stamps) {
        try {
          uint32_t t0 = ctx.timestamp();
          for (int i = 0; i < reps; ++i) run();
          uint32_t t1 = ctx.timestamp();
          return ctx.elapsed_ms(t0, t1) / reps;
        } catch (const DeviceError&) {
          stamps = false;
          ctx.synchronize();
        }
      }
      double t0 = now_s();
      for (int i = 0; i < reps; ++i) run();
      ctx.synchronize();
      return (now_s() - t0) * 1e3 / reps;
    };
    auto put = [](const char* name, double ms, const char* unit, double v) {
      std::printf("%-40s %10.4f ms  %10.2f %s\n", name, ms, v, unit);
      std::fflush(stdout);
    };
    auto gbps = [](double bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; };

    int64_t n = std::max<int64_t>(1024, int64_t(double(int64_t(1) << 26) * scale));
    vulkan::Buffer a = ctx.buffer(size_t(n) * 4), b = ctx.buffer(size_t(n) * 4),
                   c = ctx.buffer(size_t(n) * 4), o = ctx.buffer(size_t(n) * 4);
    std::vector<float> host(size_t(n), 0.5f);
    a.upload(host.data(), host.size() * 4);
    b.upload(host.data(), host.size() * 4);
    c.upload(host.data(), host.size() * 4);

    kernel::ElementwiseSpec es{OpCode::Add, DType::F32};
    es.contiguous = true;
    kernel::Kernel add = optimized(kernel::elementwise_kernel(es));
    double ms = time_ms([&] {
      ctx.launch(add,
                 {Arg::ptr(a.address()), Arg::ptr(b.address()), Arg::ptr(o.address()), Arg::of(n)},
                 groups(n / 4, 256));
    });
    put("add_64M_GBps", ms, "GB/s", gbps(3.0 * double(n) * 4, ms));

    // The backend's dense copy (16 bytes a thread), then the strided copy kernel on the same.
    kernel::CopySpec cs;
    cs.src = cs.dst = DType::F32;
    cs.rank = 1;
    cs.vector = true;
    kernel::Kernel copy = optimized(kernel::copy_kernel(cs));
    ms = time_ms([&] {
      ctx.launch(copy, {Arg::ptr(a.address()), Arg::ptr(o.address()), Arg::of(n)},
                 groups(n / 4, 256));
    });
    put("copy_GBps(read+write)", ms, "GB/s", gbps(2.0 * double(n) * 4, ms));
    cs.vector = false;
    kernel::Kernel strided = optimized(kernel::copy_kernel(cs));
    ms = time_ms([&] {
      ctx.launch(strided,
                 {Arg::ptr(a.address()), Arg::ptr(o.address()), Arg::of(n), Arg::of(n), Arg::of(1)},
                 groups(n, 256));
    });
    put("copy_strided_GBps(read+write)", ms, "GB/s", gbps(2.0 * double(n) * 4, ms));
    ms = time_ms([&] { ctx.copy(a, 0, o, 0, size_t(n) * 4); });
    put("memcpy_dtod_GBps(read+write)", ms, "GB/s", gbps(2.0 * double(n) * 4, ms));

    // The 6-op chain as one fused kernel: gelu(a * b + c).exp() * 0.5 + a, then tanh.
    fusion::Program p;
    p.shape = Shape{n};
    p.inputs = {{p.shape, DType::F32}, {p.shape, DType::F32}, {p.shape, DType::F32}};
    auto t = DType::F32;
    auto x0 = fusion::Program::input(0), x1 = fusion::Program::input(1),
         x2 = fusion::Program::input(2);
    auto sm = p.step(OpCode::Add, t, {p.step(OpCode::Mul, t, {x0, x1}), x2});
    auto ex = p.step(OpCode::Exp, t, {p.step(OpCode::Gelu, t, {sm})});
    auto y = p.step(OpCode::Add, t, {p.step(OpCode::Mul, t, {ex, p.constant(0.5, t)}), x0});
    p.outputs = {p.step(OpCode::Tanh, t, {y})};
    kernel::FusedLayout L;
    L.dense = true;
    L.width = 4;
    kernel::Kernel chain = optimized(kernel::fused_kernel(p, L));
    ms = time_ms([&] {
      ctx.launch(chain,
                 {Arg::ptr(a.address()), Arg::ptr(b.address()), Arg::ptr(c.address()),
                  Arg::ptr(o.address()), Arg::of(n), Arg::real(0.5)},
                 groups(n / 4, 256));
    });
    put("chain6_64M_fused_ms", ms, "GB/s", gbps(4.0 * double(n) * 4, ms));

    // Softmax over rows of 4096 (8192 rows at full size): a workgroup per row.
    int64_t rows = std::max<int64_t>(8, int64_t(8192 * scale)), cols = 4096;
    kernel::SoftmaxSpec ss;  // four 16-byte vectors a thread: a row of 4096 in registers
    ss.items = 4;
    ss.vector = true;
    kernel::Kernel soft = optimized(kernel::softmax_kernel(ss));
    ms = time_ms([&] {
      ctx.launch(soft,
                 {Arg::ptr(a.address()), Arg::ptr(o.address()), Arg::of(rows), Arg::of(cols),
                  Arg::of(1), Arg::of(cols), Arg::of(1), Arg::of(0)},
                 uint32_t(std::min<int64_t>(rows, 65535)));
    });
    put("softmax_8192x4096_ms", ms, "GB/s", gbps(2.0 * double(rows * cols) * 4, ms));

    // Sum of 256M floats (four buffers' worth at full size: the first one, four times as
    // long, is n * 4 elements): the split reduction, then its finish.
    int64_t big = n * 4;
    vulkan::Buffer s = ctx.buffer(size_t(big) * 4);
    int64_t splits = 4224, chunk = ((big + splits - 1) / splits + 3) / 4 * 4;
    splits = (big + chunk - 1) / chunk;
    vulkan::Buffer part = ctx.buffer(size_t(splits) * 4), total = ctx.buffer(4);
    kernel::ReduceSpec rp{OpCode::Sum, DType::F32};
    rp.stage = kernel::ReduceSpec::Partial;
    rp.vector = true;
    kernel::Kernel partial = optimized(kernel::reduce_kernel(rp));
    kernel::ReduceSpec rf{OpCode::Sum, DType::F32};
    rf.stage = kernel::ReduceSpec::Finish;
    kernel::Kernel finish = optimized(kernel::reduce_kernel(rf));
    ms = time_ms([&] {
      ctx.launch(
          partial,
          {Arg::ptr(s.address()), Arg::ptr(part.address()), Arg::of(1), Arg::of(big), Arg::of(1),
           Arg::of(big), Arg::of(1), Arg::of(1), Arg::of(chunk), Arg::of(splits)},
          uint32_t(std::min<int64_t>(splits, 65535)));
      ctx.launch(finish,
                 {Arg::ptr(part.address()), Arg::ptr(total.address()), Arg::of(1), Arg::of(splits)},
                 1);
    });
    put("sum_256M_ms", ms, "GB/s", gbps(double(big) * 4, ms));

    // Matmul 4096^3 f32 (the kernel layer's tiled kernel; CUDA's figure is cuBLASLt's).
    int64_t mn = std::max<int64_t>(64, int64_t(4096 * std::sqrt(scale)) / 64 * 64);
    vulkan::Buffer ma = ctx.buffer(size_t(mn * mn) * 4), mb = ctx.buffer(size_t(mn * mn) * 4),
                   mc = ctx.buffer(size_t(mn * mn) * 4);
    // Every tile shape the backend's tuner chooses among (vulkan/gemm.h), with vector loads;
    // the figure is the fastest's, each printed beside it.
    gpu::GemmCall call{DType::F32, mn, mn, mn, {mn, false}, {mn, false}, 1, 0, 0, mn * mn};
    double best = 1e30;
    for (const vulkan::GemmChoice& ch : vulkan::gemm_candidates(
             call, ma.address(), mb.address(), mc.address(), ctx.info().shared_memory, 128)) {
      kernel::Kernel mm = optimized(kernel::matmul_kernel(ch.spec));
      double t = time_ms([&] {
        ctx.launch(mm,
                   {Arg::ptr(ma.address()), Arg::ptr(mb.address()), Arg::ptr(mc.address()),
                    Arg::of(mn), Arg::of(mn), Arg::of(mn), Arg::of(1), Arg::of(0), Arg::of(mn),
                    Arg::of(1), Arg::of(0), Arg::of(mn), Arg::of(1)},
                   uint32_t(kernel::matmul_groups(ch.spec, mn, mn, 1)));
      });
      std::printf("# matmul tile %s: %.2f TFLOP/s\n", ch.spec.tag().c_str(),
                  2.0 * double(mn) * mn * mn / (t * 1e-3) / 1e12);
      best = std::min(best, t);
    }
    ms = best;
    put("matmul_4096_fp32_TFLOPs", ms, "TFLOP/s", 2.0 * double(mn) * mn * mn / (ms * 1e-3) / 1e12);
    // Matmul 4096^3 f16 on cooperative matrices (f32 accumulation), where the device has them:
    // the backend's choice and a few other shapes, each printed; the figure is the backend's.
    gpu::GemmCall call16{DType::F16, mn, mn, mn, {mn, false}, {mn, false}, 1, 0, 0, mn * mn};
    if (std::optional<kernel::CoopMatmulSpec> cs =
            vulkan::coop_gemm_spec(call16, ma.address(), mb.address(), ctx.info(), 132)) {
      std::vector<kernel::CoopMatmulSpec> specs{*cs};
      kernel::CoopMatmulSpec v = *cs;
      v.warps_m = v.warps_n = 2;  // 128 x 128 with 64 x 64 a subgroup
      specs.push_back(v);
      v = *cs;
      v.tile_m = v.tile_n = 64, v.warps_m = v.warps_n = 2;
      specs.push_back(v);
      v = *cs;
      v.tile_n = 256, v.warps_m = 2, v.warps_n = 4;  // 128 x 256, 64 x 64 a subgroup
      specs.push_back(v);
      for (size_t j = 0; j < specs.size(); ++j) {
        const kernel::CoopMatmulSpec& sp = specs[j];
        if (sp.shared_bytes() > int64_t(ctx.info().shared_memory)) continue;
        kernel::Kernel mm = optimized(kernel::coop_matmul_kernel(sp));
        double t = time_ms([&] {
          ctx.launch(mm,
                     {Arg::ptr(ma.address()), Arg::ptr(mb.address()), Arg::ptr(mc.address()),
                      Arg::of(mn), Arg::of(mn), Arg::of(mn), Arg::of(1), Arg::of(0), Arg::of(mn),
                      Arg::of(1), Arg::of(0), Arg::of(mn), Arg::of(1)},
                     uint32_t(kernel::coop_matmul_groups(sp, mn, mn, 1)));
        });
        std::printf("# matmul coop %s: %.2f TFLOP/s\n", sp.tag().c_str(),
                    2.0 * double(mn) * mn * mn / (t * 1e-3) / 1e12);
        if (j == 0)
          put("matmul_4096_fp16_TFLOPs", t, "TFLOP/s",
              2.0 * double(mn) * mn * mn / (t * 1e-3) / 1e12);
      }
    }

    // The same figures through the Vulkan backend (the GPU op layer's kernels and launch
    // parameters, as cuda_bench measures the CUDA backend): the wall time of `reps` ops recorded
    // and then run at a synchronize.
    const Device dev{DeviceKind::Vulkan, 0};
    auto op_ms = [&](const std::function<void()>& run) {
      for (int i = 0; i < 3; ++i) run();
      vulkan::synchronize(0);
      double t0 = now_s();
      for (int i = 0; i < reps; ++i) run();
      vulkan::synchronize(0);
      return (now_s() - t0) * 1e3 / reps;
    };
    auto zeros = [&](Shape sh) { return Vulkan::from_data(TensorData(sh, DType::F32), dev); };
    auto run = [&](OpCode code, OpAttrs at, std::vector<GpuTensor> in) {
      return apply<Vulkan>(Op{code, std::move(at)}, std::span<GpuTensor>(in.data(), in.size()));
    };
    {
      GpuTensor x = zeros(Shape{rows, cols});
      OpAttrs at;
      at.dim = 1;
      ms = op_ms([&] { (void)run(OpCode::Softmax, at, {x}); });
      put("backend_softmax_8192x4096_ms", ms, "GB/s", gbps(2.0 * double(rows * cols) * 4, ms));
    }
    {
      GpuTensor x = zeros(Shape{big});
      ms = op_ms([&] { (void)run(OpCode::Sum, {}, {x}); });
      put("backend_sum_256M_ms", ms, "GB/s", gbps(double(big) * 4, ms));
    }
    {
      GpuTensor x = zeros(Shape{mn, mn}), y = zeros(Shape{mn, mn});
      ms = op_ms([&] { (void)run(OpCode::Matmul, {}, {x, y}); });
      put("backend_matmul_4096_fp32_TFLOPs", ms, "TFLOP/s",
          2.0 * double(mn) * mn * mn / (ms * 1e-3) / 1e12);
      GpuTensor x16 = Vulkan::from_data(TensorData(Shape{mn, mn}, DType::F16), dev);
      GpuTensor y16 = Vulkan::from_data(TensorData(Shape{mn, mn}, DType::F16), dev);
      ms = op_ms([&] { (void)run(OpCode::Matmul, {}, {x16, y16}); });
      put("backend_matmul_4096_fp16_TFLOPs", ms, "TFLOP/s",
          2.0 * double(mn) * mn * mn / (ms * 1e-3) / 1e12);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vulkan_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
