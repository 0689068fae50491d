// What the kernel layer's GPU test files share: the fixture (a CUDA context for the suite, or
// the reason every test skips), host views of random data with their storage on the device,
// the CPU backend's result for an op, a kernel's launch through the driver and the comparison
// of the two results. Built with EMBER_KERNEL_TEST_VULKAN, the same suites (GpuOps,
// GpuSpatial) run on the first Vulkan device instead: the kernels rendered as GLSL, launched
// through the Vulkan runtime with the same arguments.
#pragma once
#include <gtest/gtest.h>

#ifndef EMBER_KERNEL_TEST_VULKAN
#define EMBER_KERNEL_TEST_VULKAN 0
#endif

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ember/backends/cpu/cpu.h"
#include "ember/kernel/passes.h"
#if EMBER_KERNEL_TEST_VULKAN
#include "ember/backends/vulkan/runtime.h"
#else
#include "ember/backends/cuda/driver.h"
#include "ember/kernel/codegen/nvrtc.h"
#endif

namespace ember::kernel_test {

#if EMBER_KERNEL_TEST_VULKAN
// Device memory with the CUDA test API (ptr, upload, download) over a Vulkan buffer.
struct DevBuffer {
  explicit DevBuffer(size_t bytes) : b(vulkan::context(0).buffer(bytes)) {}
  uint64_t ptr() const { return b.address(); }
  void upload(const void* src, size_t bytes) { b.upload(src, bytes); }
  void download(void* dst, size_t bytes) const { b.download(dst, bytes); }
  vulkan::Buffer b;
};
// A launch's arguments with cuda::LaunchArgs' API, in parameter order.
class LaunchArgs {
 public:
  explicit LaunchArgs(const kernel::Kernel&) {}
  LaunchArgs& buffer(uint64_t p) {
    args_.push_back(vulkan::Arg::ptr(p));
    return *this;
  }
  LaunchArgs& scalar(double v) {
    args_.push_back(vulkan::Arg::real(v));
    return *this;
  }
  LaunchArgs& scalar_int(int64_t v) {
    args_.push_back(vulkan::Arg::of(v));
    return *this;
  }
  const std::vector<vulkan::Arg>& args() const { return args_; }

 private:
  std::vector<vulkan::Arg> args_;
};
#else
using DevBuffer = cuda::DeviceBuffer;
using LaunchArgs = cuda::LaunchArgs;
#endif
using Buffer = std::unique_ptr<DevBuffer>;

// A host tensor (a view of random data: the storage is larger than the view when it is
// permuted or sliced) and its storage on the device. Copies share the device storage.
struct View {
  CpuTensor cpu;
  std::shared_ptr<DevBuffer> dev;
  uint64_t ptr() const {
    return dev->ptr() + static_cast<uint64_t>(cpu.offset * size_of(cpu.meta.dtype));
  }
};

// The fixture of the Gpu, GpuOps and GpuSpatial suites: each derives from it with its own seed
// and draws its own random inputs from rng_.
class KernelGpu : public ::testing::Test {
 protected:
  // What expect_close makes of outputs that are not floats: Exact compares them exactly (rtol
  // 0 even where one is given, atol 0 unless given); AsFloats with the tolerances it gives
  // floats (the defaults of f64 unless given).
  enum class Ints { Exact, AsFloats };

  explicit KernelGpu(std::mt19937::result_type seed, Ints ints = Ints::Exact)
      : rng_(seed), ints_(ints) {}

  // Once for each suite: the state starts as it would in a suite of its own.
  static void SetUpTestSuite() {
    skip_.clear();
    arch_ = kDefaultArch;
    std::string why;
#if EMBER_KERNEL_TEST_VULKAN
    if (!vulkan::available(&why)) skip_ = "no Vulkan device: skipped (" + why + ")";
#else
    if (!cuda::available(&why)) {
      skip_ = "no CUDA driver/GPU: skipped (" + why + ")";
      return;
    }
    std::string nv;
    if (!kernel::nvrtc_available(&nv)) {
      skip_ = "no NVRTC: skipped (" + nv + ")";
      return;
    }
    ctx_ = std::make_unique<cuda::Context>(0);
    arch_ = cuda::device_info(0).arch();
#endif
  }
#if EMBER_KERNEL_TEST_VULKAN
  static void TearDownTestSuite() {}
#else
  static void TearDownTestSuite() { ctx_.reset(); }
#endif
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
  }
  // Whether f32 subnormals survive the device's arithmetic and conversions: CUDA keeps them
  // (ember compiles without flush-to-zero); a Vulkan driver may flush them unless it offers
  // the DenormPreserve float control (NVIDIA's does not).
  static bool keeps_subnormals() {
#if EMBER_KERNEL_TEST_VULKAN
    const vulkan::DeviceInfo& d = vulkan::context(0).info();
    return d.denorm_preserve_f32 || d.type == "cpu";  // lavapipe keeps them, unannounced
#else
    return true;
#endif
  }

  // `d` on the device (one byte where it is empty).
  static Buffer upload(const TensorData& d) {
    auto b = std::make_unique<DevBuffer>(std::max<size_t>(d.bytes().size(), 1));
    if (!d.bytes().empty()) b->upload(d.bytes().data(), d.bytes().size());
    return b;
  }
  static Buffer zeros(Shape s, DType t) { return upload(TensorData(s, t)); }
  static TensorData fetch(const DevBuffer& b, Shape s, DType t) {
    TensorData d(s, t);
    if (!d.bytes().empty()) b.download(d.bytes().data(), d.bytes().size());
    return d;
  }
  // `data` on the host and the device, seen with this shape, strides and offset.
  static View view_of(const TensorData& data, Shape shape, Dims strides, int64_t offset) {
    CpuTensor h = Cpu::from_data(data, Device::cpu());
    View v;
    v.cpu = CpuTensor{h.storage, TensorMeta{shape, data.dtype()}, strides, offset};
    v.dev = upload(data);
    return v;
  }

  // The CPU backend's result of `op` on these inputs. infer() normalizes `op` in place (a
  // window's default strides, padding and dilation filled in): the caller sees its attributes
  // as the kernels take them.
  static TensorData cpu(Op& op, std::vector<CpuTensor> in) {
    std::vector<TensorMeta> metas;
    for (const CpuTensor& t : in) metas.push_back(t.meta);
    std::vector<const TensorMeta*> mp;
    for (const auto& m : metas) mp.push_back(&m);
    TensorMeta out = infer(op, mp);
    return Cpu::to_data(Cpu::run(op, in, out, Device::cpu()));
  }

#if EMBER_KERNEL_TEST_VULKAN
  // Launches `groups` workgroups (at least one, at most Vulkan's guaranteed 65535: the
  // kernels loop over their work) with the arguments `args` adds, and waits.
  static void launch(kernel::Kernel k, int64_t groups,
                     const std::function<void(LaunchArgs&)>& args) {
    kernel::default_pipeline().run(k);
    LaunchArgs a(k);
    args(a);
    vulkan::Context& c = vulkan::context(0);
    c.launch(k, a.args(), uint32_t(std::clamp<int64_t>(groups, 1, 65535)));
    c.synchronize();
  }
#else
  static kernel::CudaCompileOptions options() {
    kernel::CudaCompileOptions o;
    o.arch = arch_;
    return o;
  }

  // Compiles `k` and launches `groups` workgroups (at least one) with the arguments `args`
  // adds.
  static void launch(kernel::Kernel k, int64_t groups,
                     const std::function<void(LaunchArgs&)>& args) {
    kernel::default_pipeline().run(k);
    cuda::Module m(kernel::compile_cuda(k, options()));
    LaunchArgs a(k);
    args(a);
    m.launch(k, std::max<int64_t>(groups, 1), a);
    ctx_->synchronize();
  }
#endif

  // Element-wise within rtol and atol; by default (-1) rtol is 1e-2 for halves, 2e-5 for f32
  // and 1e-12 otherwise, atol a tenth of rtol. Outputs that are not floats: see Ints.
  void expect_close(const TensorData& got, const TensorData& want, const std::string& what,
                    double rtol = -1, double atol = -1) const {
    DType t = want.dtype();
    bool exact = !is_float(t) && ints_ == Ints::Exact;
    if (rtol < 0)
      rtol = t == DType::F16 || t == DType::BF16 ? 1e-2 : t == DType::F32 ? 2e-5 : 1e-12;
    if (exact) rtol = 0;
    if (atol < 0) atol = exact ? 0 : rtol * 0.1;
    std::string why;
    EXPECT_TRUE(got.all_close(want, rtol, atol, &why)) << what << ": " << why;
  }

  std::mt19937 rng_;

  static inline std::string skip_;
#if !EMBER_KERNEL_TEST_VULKAN
  static inline std::unique_ptr<cuda::Context> ctx_;
#endif
  static constexpr int kDefaultArch = 90;
  static inline int arch_ = kDefaultArch;

 private:
  Ints ints_;
};

}  // namespace ember::kernel_test
