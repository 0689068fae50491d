// cuDNN's legacy convolution API for conv (forward), conv_transpose (backward data) and

// conv_weight_grad (backward filter). Descriptors and the chosen algorithm are cached per
// device, op, dtype, math mode, shapes, window and pointer alignment; large convs time the
// algorithms once (Find*Ex) on the first call's buffers, others take the heuristics' first.
// The choice is also kept on disk beside the compiled kernels (kernel::KernelCache's
// directory, under cudnn/), keyed by cuDNN's version, the architecture and that key: a later
// process asks no heuristics and times nothing.
#include "ember/backends/cuda/cudnn.h"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "ember/backends/cuda/env.h"
#include "ember/backends/cuda/runtime.h"
#include "ember/backends/gpu/ops.h"
#include "ember/core/error.h"
#include "ember/kernel/cache.h"
#include "ember/kernel/dynlib.h"

namespace ember::cuda::dnn {

namespace {
struct Loaded : Api {
  kernel::DynLib lib;
  Loaded() {
    if (!lib.open({"libcudnn.so.9", "/usr/local/cuda/lib64/libcudnn.so.9"}, error)) {
      error = "no cuDNN: " + error;
      return;
    }
    bool ok = true;
    auto get = [&](auto& fn, const char* n) { ok = lib.bind(fn, {n}, error) && ok; };
    get(GetVersion, "cudnnGetVersion");
    get(GetErrorString, "cudnnGetErrorString");
    get(Create, "cudnnCreate");
    get(SetStream, "cudnnSetStream");
    get(CreateTensorDescriptor, "cudnnCreateTensorDescriptor");
    get(SetTensorNdDescriptor, "cudnnSetTensorNdDescriptor");
    get(DestroyTensorDescriptor, "cudnnDestroyTensorDescriptor");
    get(CreateFilterDescriptor, "cudnnCreateFilterDescriptor");
    get(SetFilterNdDescriptor, "cudnnSetFilterNdDescriptor");
    get(DestroyFilterDescriptor, "cudnnDestroyFilterDescriptor");
    get(CreateConvolutionDescriptor, "cudnnCreateConvolutionDescriptor");
    get(SetConvolutionNdDescriptor, "cudnnSetConvolutionNdDescriptor");
    get(SetConvolutionGroupCount, "cudnnSetConvolutionGroupCount");
    get(SetConvolutionMathType, "cudnnSetConvolutionMathType");
    get(DestroyConvolutionDescriptor, "cudnnDestroyConvolutionDescriptor");
    get(GetForwardAlgorithmMaxCount, "cudnnGetConvolutionForwardAlgorithmMaxCount");
    get(GetBackwardDataAlgorithmMaxCount, "cudnnGetConvolutionBackwardDataAlgorithmMaxCount");
    get(GetBackwardFilterAlgorithmMaxCount, "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount");
    get(GetForwardAlgorithm, "cudnnGetConvolutionForwardAlgorithm_v7");
    get(GetBackwardDataAlgorithm, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    get(GetBackwardFilterAlgorithm, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    get(FindForwardAlgorithmEx, "cudnnFindConvolutionForwardAlgorithmEx");
    get(FindBackwardDataAlgorithmEx, "cudnnFindConvolutionBackwardDataAlgorithmEx");
    get(FindBackwardFilterAlgorithmEx, "cudnnFindConvolutionBackwardFilterAlgorithmEx");
    get(GetForwardWorkspaceSize, "cudnnGetConvolutionForwardWorkspaceSize");
    get(GetBackwardDataWorkspaceSize, "cudnnGetConvolutionBackwardDataWorkspaceSize");
    get(GetBackwardFilterWorkspaceSize, "cudnnGetConvolutionBackwardFilterWorkspaceSize");
    get(ConvolutionForward, "cudnnConvolutionForward");
    get(ConvolutionBackwardData, "cudnnConvolutionBackwardData");
    get(ConvolutionBackwardFilter, "cudnnConvolutionBackwardFilter");
    if (!ok) return;
    version = static_cast<int>(GetVersion());
    if (version < 90000) {
      error = lib.name() + " is cuDNN " + std::to_string(version) + ", older than 9.0";
      return;
    }
    ready = true;
  }
};
}  // namespace

const Api& api() {
  static Loaded a;
  return a;
}

std::string describe(Status s) {
  const Api& a = api();
  const char* n = a.GetErrorString ? a.GetErrorString(s) : nullptr;
  return std::string(n ? n : "cuDNN error") + " (status " + std::to_string(s) + ")";
}

bool enabled() {
  const char* e = std::getenv("EMBER_CUDNN");
  if (e && std::string_view(e) == "0") return false;
  return api().ready;
}

}  // namespace ember::cuda::dnn

namespace ember::cuda::detail {

namespace {

std::atomic<int64_t> g_calls{0}, g_from_disk{0}, g_searched{0};

enum Pass : int { kForward, kBackwardData, kBackwardFilter };

// Convs of at least this many flops time cuDNN's algorithms once per shape (Find*Ex); smaller
// ones take the heuristics' first choice. EMBER_CUDNN_FIND=1 times every shape, 0 none.
constexpr double kFindFlops = double(int64_t(1) << 32);
// The most workspace an algorithm may take.
constexpr size_t kMaxWorkspace = size_t(1) << 30;

int find_mode() {  // -1: by size, 0: never, 1: always
  const char* e = std::getenv("EMBER_CUDNN_FIND");
  if (!e) return -1;
  std::string_view v(e);
  return v == "1" ? 1 : v == "0" ? 0 : -1;
}

// EMBER_CUDNN_TRACE=1: each new plan's set-up and first call, timed on the host (stderr), to
// see where a first step's time goes.
bool trace() {
  static const bool on = env_switch("EMBER_CUDNN_TRACE");
  return on;
}
double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int alignment(DevicePtr p) {
  int a = 1;
  while (a < 16 && p % (2 * a) == 0) a *= 2;
  return a;
}

// The geometry in cuDNN's terms: image x [N, C, *s], filter w [K, C / g, *k], y [N, K, *o] the
// forward conv's output; 1-d convs as 2-d with a unit first spatial dim.
struct Geometry {
  Pass pass;
  DType dtype;
  Dims x, w, y;
  Dims pad, stride, dilation;
  int64_t groups;
};

Dims lift(const Shape& s) {
  Dims d = s.dims();
  if (d.size() == 3) d.insert(2, 1);
  return d;
}
Dims lift(const Dims& l, int64_t unit) {
  Dims d = l;
  if (d.size() == 1) d.insert(0, unit);
  return d;
}

// Whether the cuDNN geometry of `op` maps exactly onto it; fills `g`.
bool geometry(const Op& op, const CudaTensor& a, const CudaTensor& b, const CudaTensor& out,
              Geometry& g) {
  const Window& w = op.attrs.window;
  g.dtype = out.meta.dtype;
  const Shape *xs, *ws, *ys;
  switch (op.code) {
    case OpCode::Conv:
      g.pass = kForward, xs = &a.meta.shape, ws = &b.meta.shape, ys = &out.meta.shape;
      break;
    case OpCode::ConvTranspose:
      g.pass = kBackwardData, ys = &a.meta.shape, ws = &b.meta.shape, xs = &out.meta.shape;
      break;
    case OpCode::ConvWeightGrad:
      g.pass = kBackwardFilter, xs = &a.meta.shape, ys = &b.meta.shape, ws = &out.meta.shape;
      break;
    default:
      return false;
  }
  size_t r = xs->rank();
  if (r < 3 || r > 5 || ws->rank() != r || ys->rank() != r) return false;
  // conv_transpose is backward data only where the forward conv of its output has exactly the
  // input's size (output_padding below the stride).
  for (size_t i = 0; i + 2 < r; ++i) {
    int64_t span = (*xs)[i + 2] + 2 * w.padding[i] - w.dilation[i] * ((*ws)[i + 2] - 1) - 1;
    if (span < 0 || span / w.stride[i] + 1 != (*ys)[i + 2]) return false;
  }
  for (const Shape* s : {xs, ws, ys}) {
    if (s->numel() == 0 || s->numel() > 0x7fffffff) return false;
  }
  g.x = lift(*xs), g.w = lift(*ws), g.y = lift(*ys);
  g.pad = lift(w.padding, 0), g.stride = lift(w.stride, 1), g.dilation = lift(w.dilation, 1);
  g.groups = w.groups;
  for (const Dims* l : {&g.pad, &g.stride, &g.dilation})
    for (int64_t v : *l)
      if (v > 0x7fffffff) return false;
  return true;
}

struct Plan {
  dnn::TensorDesc x = nullptr, y = nullptr;
  dnn::FilterDesc w = nullptr;
  dnn::ConvDesc conv = nullptr;
  int algo = 0;
  size_t workspace = 0;
  bool ok = false;
  bool from_disk = false;  // an earlier process's choice
  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    const dnn::Api& A = dnn::api();
    if (x) A.DestroyTensorDescriptor(x);
    if (y) A.DestroyTensorDescriptor(y);
    if (w) A.DestroyFilterDescriptor(w);
    if (conv) A.DestroyConvolutionDescriptor(conv);
  }
};
using PlanKey = std::array<int64_t, 32>;

struct DnnDevice {
  dnn::Handle handle = nullptr;
  bool ok = false;
  std::map<PlanKey, std::unique_ptr<Plan>> plans;
  std::mutex mu;
};

struct DnnDevices {
  std::mutex mu;
  std::map<int, DnnDevice*> devs;  // kept for the process, like the device state
};
DnnDevices& dnn_devices() {
  static DnnDevices* all = new DnnDevices();
  return *all;
}

DnnDevice& dnn_device(DeviceState& d) {
  DnnDevices& all = dnn_devices();
  std::lock_guard lk(all.mu);
  DnnDevice*& p = all.devs[d.index];
  if (!p) {
    p = new DnnDevice();
    const dnn::Api& A = dnn::api();
    p->ok = A.Create(&p->handle) == 0 && A.SetStream(p->handle, d.raw_stream()) == 0;
  }
  return *p;
}

std::vector<int> ints(const Dims& d) { return std::vector<int>(d.begin(), d.end()); }
std::vector<int> dense_strides(const Dims& d) {
  std::vector<int> s(d.size());
  int64_t acc = 1;
  for (size_t i = d.size(); i-- > 0;) {
    s[i] = static_cast<int>(acc);
    acc *= d[i];
  }
  return s;
}

// Whether an algorithm's math mode keeps ember's precision: exact f32 unless TF32 is allowed
// (and never the conversion of f32 data to halves).
bool math_ok(DType t, bool tf32, int math) {
  if (t != DType::F32) return true;
  return tf32 ? math != dnn::kTensorOpMathAllowConversion : math == dnn::kFmaMath;
}

struct Buffers {
  DevicePtr a, b, out;
};

// Heuristic candidates, then (large convs) a timed search on this call's buffers (`out` is
// overwritten, it is the op's output anyway). Returns the chosen algorithm's perf entry.
bool choose(DnnDevice& dd, DeviceState& d, Plan& p, const Geometry& g, bool tf32,
            const Buffers& buf, dnn::AlgoPerf& pick) {
  const dnn::Api& A = dnn::api();
  constexpr int kMax = 16;
  dnn::AlgoPerf perf[kMax] = {};
  int count = 0, n = 0;
  dnn::Status st = g.pass == kForward ? A.GetForwardAlgorithmMaxCount(dd.handle, &count)
                   : g.pass == kBackwardData
                       ? A.GetBackwardDataAlgorithmMaxCount(dd.handle, &count)
                       : A.GetBackwardFilterAlgorithmMaxCount(dd.handle, &count);
  if (st != 0 || count <= 0) return false;
  count = std::min(count, kMax);
  st = g.pass == kForward ? A.GetForwardAlgorithm(dd.handle, p.x, p.w, p.conv, p.y, count, &n, perf)
       : g.pass == kBackwardData
           ? A.GetBackwardDataAlgorithm(dd.handle, p.w, p.y, p.conv, p.x, count, &n, perf)
           : A.GetBackwardFilterAlgorithm(dd.handle, p.x, p.y, p.conv, p.w, count, &n, perf);
  if (st != 0) return false;
  std::vector<dnn::AlgoPerf> ok;
  size_t most = 0;
  for (int i = 0; i < std::min(n, count); ++i)
    if (perf[i].status == 0 && perf[i].memory <= kMaxWorkspace &&
        math_ok(g.dtype, tf32, perf[i].math_type)) {
      ok.push_back(perf[i]);
      most = std::max(most, perf[i].memory);
    }
  if (ok.empty()) return false;
  pick = ok[0];
  double flops = 2.0 * double(Shape(g.y).numel()) * double(Shape(g.w).numel() / g.w[0]);
  int mode = find_mode();
  if (mode == 0 || (mode < 0 && flops < kFindFlops)) return true;
  std::shared_ptr<gpu::Storage> ws;
  try {
    ws = d.allocate(most);
  } catch (const MemoryError&) {
    return true;  // no room to time them: the heuristics' choice
  }
  void* w = reinterpret_cast<void*>(ws->ptr);
  auto* a = reinterpret_cast<void*>(buf.a);
  auto* b = reinterpret_cast<void*>(buf.b);
  auto* o = reinterpret_cast<void*>(buf.out);
  n = 0;
  st = g.pass == kForward ? A.FindForwardAlgorithmEx(dd.handle, p.x, a, p.w, b, p.conv, p.y, o,
                                                     count, &n, perf, w, most)
       : g.pass == kBackwardData
           ? A.FindBackwardDataAlgorithmEx(dd.handle, p.w, b, p.y, a, p.conv, p.x, o, count, &n,
                                           perf, w, most)
           : A.FindBackwardFilterAlgorithmEx(dd.handle, p.x, a, p.y, b, p.conv, p.w, o, count, &n,
                                             perf, w, most);
  if (st != 0) return true;
  for (int i = 0; i < std::min(n, count); ++i)  // fastest first
    if (perf[i].status == 0 && perf[i].memory <= most &&
        math_ok(g.dtype, tf32, perf[i].math_type)) {
      pick = perf[i];
      break;
    }
  return true;
}

// The choices of earlier processes: {algorithm, math type, workspace bytes} by cuDNN version,
// architecture and plan key.
kernel::KernelCache& choices() {
  static kernel::KernelCache c = [] {
    std::filesystem::path dir = kernel::KernelCache::default_dir();
    return kernel::KernelCache(dir.empty() ? dir : dir / "cudnn");
  }();
  return c;
}

std::string choice_key(const DeviceState& d, const PlanKey& k) {
  std::string s =
      "cudnn-choice " + std::to_string(dnn::api().version) + " sm" + std::to_string(d.arch);
  for (int64_t v : k) s += " " + std::to_string(v);
  return s;
}

struct Choice {
  int32_t algo, math;
  uint64_t memory;
};

std::optional<dnn::AlgoPerf> stored_choice(const std::string& key) {
  std::optional<std::vector<char>> v = choices().get(key);
  if (!v || v->size() != sizeof(Choice)) return std::nullopt;
  Choice c;
  std::memcpy(&c, v->data(), sizeof c);
  dnn::AlgoPerf p{};
  p.algo = c.algo, p.math_type = c.math, p.memory = c.memory;
  return p;
}

void store_choice(const std::string& key, const dnn::AlgoPerf& p) {
  Choice c{p.algo, p.math_type, p.memory};
  choices().put(key, std::span<const char>(reinterpret_cast<const char*>(&c), sizeof c));
}

// Descriptors and algorithm for `g`; `ok` false when cuDNN does not take the case. A choice
// stored by an earlier process (`key`) is taken when cuDNN still accepts it for `g`.
std::unique_ptr<Plan> make_plan(DnnDevice& dd, DeviceState& d, const Geometry& g, bool tf32,
                                const Buffers& buf, const std::string& key) {
  const dnn::Api& A = dnn::api();
  auto p = std::make_unique<Plan>();
  int type = g.dtype == DType::F32   ? dnn::kFloat
             : g.dtype == DType::F64 ? dnn::kDouble
             : g.dtype == DType::F16 ? dnn::kHalf
                                     : dnn::kBFloat16;
  int compute = g.dtype == DType::F64 ? dnn::kDouble : dnn::kFloat;
  int math = g.dtype == DType::F16 || g.dtype == DType::BF16 ? dnn::kTensorOpMath
             : g.dtype == DType::F32 && !tf32                ? dnn::kFmaMath
                                                             : dnn::kDefaultMath;
  auto nd = static_cast<int>(g.x.size());
  auto tensor = [&](dnn::TensorDesc& t, const Dims& dims) {
    if (A.CreateTensorDescriptor(&t) != 0) return false;
    std::vector<int> dv = ints(dims), sv = dense_strides(dims);
    return A.SetTensorNdDescriptor(t, type, nd, dv.data(), sv.data()) == 0;
  };
  if (!tensor(p->x, g.x) || !tensor(p->y, g.y)) return p;
  std::vector<int> wd = ints(g.w);
  if (A.CreateFilterDescriptor(&p->w) != 0 ||
      A.SetFilterNdDescriptor(p->w, type, dnn::kNchw, nd, wd.data()) != 0)
    return p;
  std::vector<int> pad = ints(g.pad), stride = ints(g.stride), dil = ints(g.dilation);
  if (A.CreateConvolutionDescriptor(&p->conv) != 0 ||
      A.SetConvolutionNdDescriptor(p->conv, nd - 2, pad.data(), stride.data(), dil.data(),
                                   dnn::kCrossCorrelation, compute) != 0 ||
      A.SetConvolutionGroupCount(p->conv, static_cast<int>(g.groups)) != 0 ||
      A.SetConvolutionMathType(p->conv, math) != 0)
    return p;
  // cuDNN runs an algorithm in the math mode its search reported, so the descriptor takes it.
  auto take = [&](const dnn::AlgoPerf& pick) {
    if (!math_ok(g.dtype, tf32, pick.math_type) ||
        A.SetConvolutionMathType(p->conv, pick.math_type) != 0)
      return false;
    size_t ws = 0;
    dnn::Status st =
        g.pass == kForward
            ? A.GetForwardWorkspaceSize(dd.handle, p->x, p->w, p->conv, p->y, pick.algo, &ws)
        : g.pass == kBackwardData
            ? A.GetBackwardDataWorkspaceSize(dd.handle, p->w, p->y, p->conv, p->x, pick.algo, &ws)
            : A.GetBackwardFilterWorkspaceSize(dd.handle, p->x, p->y, p->conv, p->w, pick.algo,
                                               &ws);
    if (st != 0) return false;
    p->algo = pick.algo;
    p->workspace = std::max(ws, size_t(pick.memory));
    p->ok = true;
    return true;
  };
  if (std::optional<dnn::AlgoPerf> stored = stored_choice(key); stored && take(*stored)) {
    p->from_disk = true;
    g_from_disk++;
    return p;
  }
  dnn::AlgoPerf pick{};
  if (choose(dd, d, *p, g, tf32, buf, pick) && take(pick)) {
    g_searched++;
    store_choice(key, pick);
  }
  return p;
}

void forget_plans() {
  DnnDevices& all = dnn_devices();
  std::lock_guard lk(all.mu);
  for (auto& [index, dd] : all.devs) {
    std::lock_guard plk(dd->mu);
    dd->plans.clear();
  }
  choices().clear_memory();
}

const char* call_name(Pass p) {
  return p == kForward        ? "cudnnConvolutionForward"
         : p == kBackwardData ? "cudnnConvolutionBackwardData"
                              : "cudnnConvolutionBackwardFilter";
}

}  // namespace

bool cudnn_conv(const Op& op, const CudaTensor& a0, const CudaTensor& b0, const CudaTensor& out) {
  if (!dnn::enabled()) return false;
  DType t = out.meta.dtype;
  if (t != DType::F32 && t != DType::F16 && t != DType::BF16 && t != DType::F64) return false;
  Geometry g;
  if (!geometry(op, a0, b0, out, g)) return false;
  auto& d = static_cast<DeviceState&>(gpu::runtime(out));
  DnnDevice& dd = dnn_device(d);
  if (!dd.ok) return false;
  // Views that start off 16 bytes (a slice's offset) are copied: cuDNN's vector loads want it.
  CudaTensor a = alignment(a0.ptr()) < 16 ? gpu::copy_strided(a0) : a0;
  CudaTensor b = alignment(b0.ptr()) < 16 ? gpu::copy_strided(b0) : b0;
  bool tf32 = allow_tf32();
  Buffers buf{a.ptr(), b.ptr(), out.ptr()};
  PlanKey k{};
  size_t i = 0;
  k[i++] = g.pass, k[i++] = int64_t(t), k[i++] = tf32, k[i++] = int64_t(g.x.size());
  for (const Dims* l : {&g.x, &g.w, &g.y}) {
    for (size_t j = 0; j < 5; ++j) k[i++] = j < l->size() ? (*l)[j] : 0;
  }
  for (const Dims* l : {&g.pad, &g.stride, &g.dilation}) {
    for (size_t j = 0; j < 3; ++j) k[i++] = j < l->size() ? (*l)[j] : 0;
  }
  k[i++] = g.groups;
  k[i++] = alignment(buf.a), k[i++] = alignment(buf.b), k[i++] = alignment(buf.out);
  std::lock_guard lk(dd.mu);
  auto it = dd.plans.find(k);
  double t0 = 0, t1 = 0;
  bool first = it == dd.plans.end();
  if (first) {
    t0 = trace() ? now_ms() : 0;
    it = dd.plans.emplace(k, make_plan(dd, d, g, tf32, buf, choice_key(d, k))).first;
    t1 = trace() ? now_ms() : 0;
  }
  const Plan& p = *it->second;
  if (!p.ok) return false;
  const dnn::Api& A = dnn::api();
  std::shared_ptr<gpu::Storage> ws = d.allocate(p.workspace);
  void* w = reinterpret_cast<void*>(ws->ptr);
  float f1 = 1, f0 = 0;
  double d1 = 1, d0 = 0;
  const void* one = t == DType::F64 ? static_cast<const void*>(&d1) : &f1;
  const void* zero = t == DType::F64 ? static_cast<const void*>(&d0) : &f0;
  auto* pa = reinterpret_cast<const void*>(buf.a);
  auto* pb = reinterpret_cast<const void*>(buf.b);
  auto* po = reinterpret_cast<void*>(buf.out);
  dnn::Status st = g.pass == kForward
                       ? A.ConvolutionForward(dd.handle, one, p.x, pa, p.w, pb, p.conv, p.algo, w,
                                              p.workspace, zero, p.y, po)
                   : g.pass == kBackwardData
                       ? A.ConvolutionBackwardData(dd.handle, one, p.w, pb, p.y, pa, p.conv, p.algo,
                                                   w, p.workspace, zero, p.x, po)
                       : A.ConvolutionBackwardFilter(dd.handle, one, p.x, pa, p.y, pb, p.conv,
                                                     p.algo, w, p.workspace, zero, p.w, po);
  if (st != 0) {
    const CudaTensor ins[2] = {a, b};
    throw DeviceError("[" + std::string(name(op.code)) + "] " + call_name(g.pass) + " failed: " +
                      dnn::describe(st) + " for inputs " + gpu::describe(ins) + ", output " +
                      out.meta.shape.to_string() + " (algorithm " + std::to_string(p.algo) + ")");
  }
  if (first && trace())
    std::fprintf(stderr,
                 "[cudnn] %s x%s w%s y%s: plan %.2f ms%s, first call %.2f ms (algorithm %d)\n",
                 call_name(g.pass), Shape(g.x).to_string().c_str(), Shape(g.w).to_string().c_str(),
                 Shape(g.y).to_string().c_str(), t1 - t0, p.from_disk ? " (from disk)" : "",
                 now_ms() - t1, p.algo);
  g_calls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace ember::cuda::detail

namespace ember::cuda {

int cudnn_version(std::string* why) {
  const dnn::Api& a = dnn::api();
  if (!a.ready) {
    if (why) *why = a.error;
    return 0;
  }
  if (!dnn::enabled()) {
    if (why) *why = "cuDNN is off (EMBER_CUDNN=0)";
    return 0;
  }
  return a.version;
}

int64_t cudnn_conv_calls() { return detail::g_calls.load(std::memory_order_relaxed); }

CudnnChoiceStats cudnn_choice_stats() {
  return {detail::g_from_disk.load(), detail::g_searched.load()};
}

void forget_cudnn_plans() { detail::forget_plans(); }

}  // namespace ember::cuda
