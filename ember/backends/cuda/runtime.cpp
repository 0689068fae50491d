// Per-device state, the kernel map and the launch path.
#include "ember/backends/cuda/runtime.h"
#include "ember/fusion/fusion.h"

#include <algorithm>
#include <atomic>

#include "ember/backends/cuda/ops.h"
#include "ember/core/error.h"
#include "ember/kernel/codegen/nvrtc.h"

namespace ember::cuda::detail {

namespace {
constexpr int kMaxDevices = 64;
std::atomic<DeviceState*> g_devices[kMaxDevices];
std::mutex g_devices_mu;
thread_local CuContext* t_current = nullptr;
std::atomic<bool> g_tf32{false};
}  // namespace

int device_count_cached() {
  static int n = [] {
    std::string why;
    return available(&why) ? std::min(cuda::device_count(), kMaxDevices) : 0;
  }();
  return n;
}

DeviceState::DeviceState(int i) : index(i) {
  ctx = raw::primary_context(i);
  raw::set_current(ctx);
  t_current = ctx;
  DeviceInfo info = device_info(i);
  arch = info.arch();
  multiprocessors = std::max(1, info.multiprocessors);
  stream = std::make_unique<Stream>();
}

DeviceState& device(int index) {
  if (index < 0 || index >= kMaxDevices)
    throw DeviceError("[cuda] no device cuda:" + std::to_string(index));
  DeviceState* d = g_devices[index].load(std::memory_order_acquire);
  if (!d) {
    std::lock_guard lk(g_devices_mu);
    d = g_devices[index].load(std::memory_order_relaxed);
    if (!d) {
      if (index >= device_count_cached())
        throw DeviceError("[cuda] no device cuda:" + std::to_string(index) + " (" +
                          std::to_string(device_count_cached()) + " found)");
      // Never destroyed: tensors freed during exit still return their blocks to it.
      d = new DeviceState(index);
      g_devices[index].store(d, std::memory_order_release);
    }
  }
  if (t_current != d->ctx) {
    raw::set_current(d->ctx);
    t_current = d->ctx;
  }
  return *d;
}

namespace {
std::unique_ptr<Loaded> compile_and_load(int arch, const kernel::Kernel& kern) {
  kernel::CudaCompileOptions o;
  o.arch = arch;
  kernel::CudaBinary bin = kernel::compile_cuda(kern, o);
  auto l = std::make_unique<Loaded>();
  l->module = std::make_unique<Module>(bin);
  l->fn = l->module->function();
  for (int j = 0; j < 3; ++j) l->block[j] = kern.workgroup[j];
  for (const kernel::Param& p : kern.params)
    l->params.push_back(p.kind == kernel::Param::Buffer ? kernel::ScalarType::Void : p.type.scalar);
  l->name = kern.name;
  return l;
}
}  // namespace

const Loaded* DeviceState::find(const std::string& k) {
  std::lock_guard lk(mu_);
  auto it = named_.find(k);
  return it == named_.end() ? nullptr : it->second.get();
}

const Loaded& DeviceState::load(const std::string& k, const kernel::Kernel& kern) {
  auto l = compile_and_load(arch, kern);
  std::lock_guard lk(mu_);
  auto [it, fresh] = named_.emplace(k, std::move(l));
  return *it->second;
}

const Loaded& DeviceState::load(uint64_t k, const kernel::Kernel& kern) {
  auto l = compile_and_load(arch, kern);
  std::lock_guard lk(mu_);
  auto [it, fresh] = kernels_.emplace(k, std::move(l));
  return *it->second;
}

Args& Args::i(int64_t v) {
  uint64_t slot = 0;
  switch (l_.params[n_]) {
    case kernel::ScalarType::I32: {
      auto x = static_cast<int32_t>(v);
      std::memcpy(&slot, &x, 4);
      break;
    }
    case kernel::ScalarType::U32: {
      auto x = static_cast<uint32_t>(v);
      std::memcpy(&slot, &x, 4);
      break;
    }
    case kernel::ScalarType::F32:
    case kernel::ScalarType::F64:
      return f(static_cast<double>(v));
    default:
      std::memcpy(&slot, &v, 8);
  }
  slots_[n_++] = slot;
  return *this;
}

Args& Args::f(double v) {
  uint64_t slot = 0;
  if (l_.params[n_] == kernel::ScalarType::F32) {
    auto x = static_cast<float>(v);
    std::memcpy(&slot, &x, 4);
  } else if (l_.params[n_] == kernel::ScalarType::F64) {
    std::memcpy(&slot, &v, 8);
  } else {
    return i(Scalar::saturate(v));
  }
  slots_[n_++] = slot;
  return *this;
}

void Args::launch(DeviceState& d, int64_t groups) {
  if (groups <= 0) return;
  if (size_t(n_) != l_.params.size())
    throw Error("[cuda " + l_.name + "] " + std::to_string(n_) + " arguments for " +
                std::to_string(l_.params.size()) + " parameters");
  void* p[kMaxArgs];
  for (int j = 0; j < n_; ++j) p[j] = &slots_[j];
  raw::launch(l_.fn, static_cast<unsigned>(std::min<int64_t>(groups, 0x7fffffff)), l_.block, 0,
              d.s(), p);
}

int64_t groups_for(const DeviceState& d, int64_t n, int64_t per_group) {
  int64_t g = (n + per_group - 1) / per_group;
  return std::clamp<int64_t>(g, 1, int64_t(d.multiprocessors) * 32);
}

CudaTensor empty(const TensorMeta& meta, int dev) {
  auto bytes = static_cast<size_t>(byte_size(meta.shape, size_of(meta.dtype), "cuda"));
  CudaTensor t;
  t.storage = std::make_shared<Storage>(dev, bytes);
  t.meta = meta;
  t.strides = contiguous_strides(meta.shape);
  t.device = dev;
  return t;
}

CudaTensor contiguous(const CudaTensor& t) {
  if (t.is_contiguous()) return t;
  return copy_strided(t);
}

Dims broadcast_strides(const CudaTensor& t, const Shape& shape) {
  const Shape& s = t.meta.shape;
  size_t off = shape.rank() - s.rank();
  Dims st(shape.rank(), 0);
  for (size_t i = 0; i < s.rank(); ++i) st[off + i] = s[i] == 1 ? 0 : t.strides[i];
  return st;
}

bool reusable(const CudaTensor& t, const TensorMeta& out) {
  return t.storage && t.storage.use_count() == 1 && t.meta == out && t.is_contiguous() &&
         t.offset == 0;
}

Collapsed collapse(const Shape& shape, std::span<const Dims* const> strides) {
  Collapsed c;
  size_t n = strides.size();
  c.strides.resize(n);
  c.numel = shape.numel();
  // From the innermost dim out: drop size-1 dims, merge a dim into the one inside it when
  // every operand steps over it as over one longer dim.
  for (size_t d = shape.rank(); d-- > 0;) {
    int64_t size = shape[d];
    if (size == 1) continue;
    bool merge = !c.shape.empty();
    for (size_t j = 0; j < n && merge; ++j)
      merge = (*strides[j])[d] == c.strides[j].back() * c.shape.back();
    if (merge) {
      c.shape.back() *= size;
    } else {
      c.shape.push_back(size);
      for (size_t j = 0; j < n; ++j) c.strides[j].push_back((*strides[j])[d]);
    }
  }
  if (c.shape.empty()) {
    c.shape.push_back(1);
    for (size_t j = 0; j < n; ++j) c.strides[j].push_back(0);
  }
  std::reverse(c.shape.begin(), c.shape.end());
  for (size_t j = 0; j < n; ++j) std::reverse(c.strides[j].begin(), c.strides[j].end());
  constexpr int64_t kMax = 0x7fffffff;
  c.wide = c.numel > kMax;
  for (size_t j = 0; j < n && !c.wide; ++j) {
    int64_t reach = 0;
    for (size_t d = 0; d < c.shape.size(); ++d)
      reach += (c.shape[d] - 1) * std::abs(c.strides[j][d]);
    c.wide = reach > kMax;
  }
  return c;
}

std::string describe(std::span<const CudaTensor> in) {
  std::string s;
  for (const CudaTensor& t : in) {
    if (!s.empty()) s += ", ";
    s += t.meta.shape.to_string() + " " + std::string(name(t.meta.dtype));
  }
  return s.empty() ? "no inputs" : s;
}

void not_implemented(const Op& op, std::span<const CudaTensor> in, const std::string& what) {
  throw DeviceError("[" + std::string(name(op.code)) + "] not implemented on cuda yet" +
                    (what.empty() ? "" : " (" + what + ")") + ": inputs " + describe(in));
}

}  // namespace ember::cuda::detail

namespace ember::cuda {

using detail::device;

Storage::Storage(int dev, size_t n) : bytes(n), device(dev) {
  if (n) {
    auto& d = detail::device(dev);
    ptr = d.pool.allocate(n, d.s());
  }
}
Storage::~Storage() {
  // The device exists (it allocated this); no driver call, so nothing can throw here.
  if (ptr)
    if (detail::DeviceState* d = detail::g_devices[device].load(std::memory_order_acquire))
      d->pool.release(ptr, bytes, d->s());
}

void synchronize(int dev) {
  Fusion<Cuda>::flush({DeviceKind::Cuda, dev});  // what is still recorded runs first
  raw::stream_synchronize(device(dev).s());
}
void set_allow_tf32(bool on) { detail::g_tf32 = on; }
bool allow_tf32() { return detail::g_tf32.load(std::memory_order_relaxed); }

MemoryStats memory_stats(int dev) { return device(dev).pool.stats(); }
void empty_cache(int dev) {
  auto& d = device(dev);
  raw::stream_synchronize(d.s());
  d.pool.empty_cache();
}
void reset_peak_memory_stats(int dev) { device(dev).pool.reset_peak(); }

}  // namespace ember::cuda
