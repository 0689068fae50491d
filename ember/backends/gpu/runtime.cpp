// The kernel map, argument packing and the helpers every GPU op shares.
#include "ember/backends/gpu/runtime.h"

#include <algorithm>
#include <cstring>

#include "ember/backends/gpu/kernels.h"
#include "ember/backends/gpu/ops.h"
#include "ember/core/error.h"

namespace ember {

namespace gpu {

Storage::~Storage() = default;
Runtime::~Runtime() = default;

std::string Runtime::label() const { return std::string(backend()) + ":" + std::to_string(index); }

const Loaded* Runtime::find(uint64_t k) {
  std::lock_guard lk(mu_);
  auto it = kernels_.find(k);
  return it == kernels_.end() ? nullptr : it->second.get();
}

const Loaded* Runtime::find(const std::string& k) {
  std::lock_guard lk(mu_);
  auto it = named_.find(k);
  return it == named_.end() ? nullptr : it->second.get();
}

const Loaded& Runtime::load(const std::string& k, const kernel::Kernel& kern) {
  auto l = compile(kern);
  std::lock_guard lk(mu_);
  auto [it, fresh] = named_.emplace(k, std::move(l));
  return *it->second;
}

const Loaded& Runtime::load(uint64_t k, const kernel::Kernel& kern) {
  auto l = compile(kern);
  std::lock_guard lk(mu_);
  auto [it, fresh] = kernels_.emplace(k, std::move(l));
  return *it->second;
}

void Runtime::gemm(const GemmCall& g, Address a, Address b, Address c, const std::string&) {
  const Loaded& l = kernel_for(*this, key(Kind::Matmul, 0, g.dtype),
                               [&] { return kernels::naive_matmul_kernel(g.dtype); });
  Args args(l);
  int64_t ar = g.va.col ? 1 : g.va.ld, ac = g.va.col ? g.va.ld : 1;
  int64_t br = g.vb.col ? 1 : g.vb.ld, bc = g.vb.col ? g.vb.ld : 1;
  args.ptr(a).ptr(b).ptr(c).i(g.batch).i(g.m).i(g.n).i(g.k);
  args.i(g.sa).i(ar).i(ac).i(g.sb).i(br).i(bc);
  args.launch(*this, groups_for(*this, g.batch * g.m * g.n, 256));
}

Args& Args::push(Arg a) {
  if (n_ == kMaxArgs)
    throw ValueError("[" + l_.name + "] more than " + std::to_string(kMaxArgs) + " arguments");
  args_[n_++] = a;
  return *this;
}

namespace {
thread_local CompileProbe* t_probe = nullptr;
}  // namespace

CompileProbe::CompileProbe() : outer_(t_probe) { t_probe = this; }
CompileProbe::~CompileProbe() { t_probe = outer_; }
CompileProbe* CompileProbe::active() { return t_probe; }

void Args::launch(Runtime& d, int64_t groups) {
  if (CompileProbe* p = t_probe) {
    p->kernels.push_back(&l_);
    return;
  }
  if (groups <= 0) return;
  if (size_t(n_) != l_.params.size())
    throw Error("[" + std::string(d.backend()) + " " + l_.name + "] " + std::to_string(n_) +
                " arguments for " + std::to_string(l_.params.size()) + " parameters");
  d.launch(l_, std::span<const Arg>(args_, size_t(n_)), groups);
}

uint64_t pack(const Arg& a, kernel::ScalarType t) {
  uint64_t slot = 0;
  auto put = [&](auto v) { std::memcpy(&slot, &v, sizeof v); };
  bool real = a.kind == Arg::Real;
  switch (t) {
    case kernel::ScalarType::F32:
      put(static_cast<float>(real ? a.f : double(a.i)));
      break;
    case kernel::ScalarType::F64:
      put(real ? a.f : double(a.i));
      break;
    case kernel::ScalarType::I32:
      put(static_cast<int32_t>(real ? Scalar::saturate(a.f) : a.i));
      break;
    case kernel::ScalarType::U32:
      put(static_cast<uint32_t>(real ? Scalar::saturate(a.f) : a.i));
      break;
    default:  // 64-bit integers and addresses
      put(real ? Scalar::saturate(a.f) : a.i);
  }
  return slot;
}

int64_t groups_for(const Runtime& d, int64_t n, int64_t per_group) {
  int64_t g = (n + per_group - 1) / per_group;
  return std::clamp<int64_t>(g, 1, int64_t(d.multiprocessors) * 32);
}

GpuTensor empty(const TensorMeta& meta, Runtime& d) {
  auto bytes = static_cast<size_t>(byte_size(meta.shape, size_of(meta.dtype), d.backend()));
  GpuTensor t;
  t.storage = d.allocate(bytes);
  t.meta = meta;
  t.strides = contiguous_strides(meta.shape);
  t.device = d.index;
  t.runtime = &d;
  return t;
}

GpuTensor contiguous(const GpuTensor& t) {
  if (t.is_contiguous()) return t;
  return copy_strided(t);
}

void zero(const GpuTensor& t, size_t bytes) {
  if (bytes) runtime(t).fill(*t.storage, size_t(t.offset) * size_of(t.meta.dtype), 0, 1, bytes);
}

Dims broadcast_strides(const GpuTensor& t, const Shape& shape) {
  return ember::broadcast_strides(t.meta.shape, t.strides, shape);
}

bool reusable(const GpuTensor& t, const TensorMeta& out) {
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

std::string describe(std::span<const GpuTensor> in) {
  std::string s;
  for (const GpuTensor& t : in) {
    if (!s.empty()) s += ", ";
    s += t.meta.shape.to_string() + " " + std::string(name(t.meta.dtype));
  }
  return s.empty() ? "no inputs" : s;
}

void not_implemented(const Op& op, std::span<const GpuTensor> in, const std::string& what) {
  std::string where = !in.empty() && in[0].runtime ? in[0].runtime->backend() : "this GPU backend";
  throw DeviceError("[" + std::string(name(op.code)) + "] not implemented on " + where + " yet" +
                    (what.empty() ? "" : " (" + what + ")") + ": inputs " + describe(in));
}

}  // namespace gpu

bool GpuTensor::is_contiguous() const { return is_dense(meta.shape, strides); }

gpu::Address GpuTensor::ptr() const {
  if (!storage || !storage->ptr) return 0;
  return storage->ptr + static_cast<uint64_t>(offset * int64_t(size_of(meta.dtype)));
}

}  // namespace ember
