// The CUDA runtime's GEMM (gpu/matmul.cpp makes the calls): floats go through cuBLASLt
// (row-major C = A B is column-major C^T = B^T A^T, so the operands swap). Integers, and shapes
// cuBLASLt finds no algorithm for, use the simple kernel of the GPU layer. Large products may
// time the heuristic's first few algorithms once per shape, layout and alignment.
#include <array>
#include <cmath>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "ember/backends/cuda/cublaslt.h"
#include "ember/backends/cuda/runtime.h"
#include "ember/core/error.h"

namespace ember::cuda::detail {

namespace {

int alignment(DevicePtr p) {
  int a = 1;
  while (a < 256 && p % (2 * a) == 0) a *= 2;
  return a;
}

// One cuBLASLt plan: descriptors and the chosen algorithm for a shape, layout and alignment.
struct Plan {
  lt::MatmulDesc desc = nullptr;
  lt::Layout a = nullptr, b = nullptr, c = nullptr;
  lt::Algo algo{};
  bool found = false;
  std::vector<lt::Algo> candidates;  // the heuristic's best first
  bool tuned = false;
};
// Algorithms asked of the heuristic; large products time them once and keep the fastest.
constexpr int kCandidates = 4;
constexpr double kTuneFlops = double(int64_t(1) << 36);
using PlanKey = std::array<int64_t, 18>;

struct LtDevice {
  lt::Handle handle = nullptr;
  std::shared_ptr<gpu::Storage> workspace;
  std::map<PlanKey, Plan> plans;
  std::mutex mu;
};
constexpr size_t kWorkspace = size_t(32) << 20;

LtDevice& lt_device(DeviceState& d) {
  static std::mutex mu;
  static std::map<int, LtDevice*> devs;  // kept for the process, like the device state
  std::lock_guard lk(mu);
  LtDevice*& p = devs[d.index];
  if (!p) {
    const lt::Api& a = lt::api();
    if (!a.ready) throw DeviceError("[matmul] " + a.error);
    auto* n = new LtDevice();
    lt::Status st = a.Create(&n->handle);
    if (st != 0) {
      delete n;
      throw DeviceError("[matmul] cublasLtCreate failed: " + lt::describe(st));
    }
    n->workspace = d.allocate(kWorkspace);
    p = n;
  }
  return *p;
}

void lt_check(lt::Status s, const char* call, const std::string& shapes) {
  if (s != 0)
    throw DeviceError(std::string("[matmul] ") + call + " failed: " + lt::describe(s) + " for " +
                      shapes);
}

void set_bias(const Plan& p, uint64_t bias, const std::string& shapes) {
  const void* ptr = reinterpret_cast<const void*>(bias);
  lt_check(lt::api().MatmulDescSetAttribute(p.desc, lt::kDescBiasPointer, &ptr, sizeof ptr),
           "cublasLtMatmulDescSetAttribute", shapes);
}

// Builds the plan for `g` with these pointer alignments (nullptr-free: plans are cached).
Plan make_plan(LtDevice& ld, const GemmCall& g, int al_a, int al_b, int al_c, bool tf32,
               const std::string& shapes) {
  const lt::Api& A = lt::api();
  int type = g.dtype == DType::F32   ? lt::kR32F
             : g.dtype == DType::F64 ? lt::kR64F
             : g.dtype == DType::F16 ? lt::kR16F
                                     : lt::kR16BF;
  int compute = g.dtype == DType::F64             ? lt::kCompute64F
                : (g.dtype == DType::F32 && tf32) ? lt::kCompute32FFastTf32
                                                  : lt::kCompute32F;
  int scale = g.dtype == DType::F64 ? lt::kR64F : lt::kR32F;
  Plan p;
  lt_check(A.MatmulDescCreate(&p.desc, compute, scale), "cublasLtMatmulDescCreate", shapes);
  // Column-major view: D^T[n, m] = op(B)[n, k] op(A)[k, m]; cuBLAS's A is our b.
  int32_t ta = g.vb.col ? lt::kOpT : lt::kOpN, tb = g.va.col ? lt::kOpT : lt::kOpN;
  lt_check(A.MatmulDescSetAttribute(p.desc, lt::kDescTransA, &ta, sizeof ta),
           "cublasLtMatmulDescSetAttribute", shapes);
  lt_check(A.MatmulDescSetAttribute(p.desc, lt::kDescTransB, &tb, sizeof tb),
           "cublasLtMatmulDescSetAttribute", shapes);
  if (g.has_epilogue()) {
    int32_t ep = (g.relu ? lt::kEpilogueRelu : 0) | (g.bias ? lt::kEpilogueBias : 0);
    if (!ep) ep = lt::kEpilogueDefault;
    lt_check(A.MatmulDescSetAttribute(p.desc, lt::kDescEpilogue, &ep, sizeof ep),
             "cublasLtMatmulDescSetAttribute", shapes);
    // The heuristic reads the bias pointer's alignment; each call sets its own (run_plan).
    if (g.bias) set_bias(p, g.bias, shapes);
  }
  auto layout = [&](lt::Layout& l, uint64_t rows, uint64_t cols, int64_t ldv, int64_t stride) {
    lt_check(A.MatrixLayoutCreate(&l, type, rows, cols, ldv), "cublasLtMatrixLayoutCreate", shapes);
    if (g.batch > 1) {
      auto count = static_cast<int32_t>(g.batch);
      lt_check(A.MatrixLayoutSetAttribute(l, lt::kLayoutBatchCount, &count, sizeof count),
               "cublasLtMatrixLayoutSetAttribute", shapes);
      lt_check(A.MatrixLayoutSetAttribute(l, lt::kLayoutBatchStride, &stride, sizeof stride),
               "cublasLtMatrixLayoutSetAttribute", shapes);
    }
  };
  if (g.vb.col)
    layout(p.a, g.k, g.n, g.vb.ld, g.sb);
  else
    layout(p.a, g.n, g.k, g.vb.ld, g.sb);
  if (g.va.col)
    layout(p.b, g.m, g.k, g.va.ld, g.sa);
  else
    layout(p.b, g.k, g.m, g.va.ld, g.sa);
  layout(p.c, g.n, g.m, g.n, g.sc);
  lt::Preference pref = nullptr;
  lt_check(A.MatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate", shapes);
  uint64_t ws = kWorkspace;
  A.MatmulPreferenceSetAttribute(pref, lt::kPrefMaxWorkspace, &ws, sizeof ws);
  uint32_t aa = al_b, ab = al_a, ac = al_c;  // cuBLAS's A is our b
  A.MatmulPreferenceSetAttribute(pref, lt::kPrefAlignA, &aa, sizeof aa);
  A.MatmulPreferenceSetAttribute(pref, lt::kPrefAlignB, &ab, sizeof ab);
  A.MatmulPreferenceSetAttribute(pref, lt::kPrefAlignC, &ac, sizeof ac);
  A.MatmulPreferenceSetAttribute(pref, lt::kPrefAlignD, &ac, sizeof ac);
  lt::HeuristicResult res[kCandidates] = {};
  int found = 0;
  lt::Status st = A.MatmulAlgoGetHeuristic(ld.handle, p.desc, p.a, p.b, p.c, p.c, pref, kCandidates,
                                           res, &found);
  A.MatmulPreferenceDestroy(pref);
  for (int i = 0; st == 0 && i < std::min(found, kCandidates); ++i)
    if (res[i].state == 0) p.candidates.push_back(res[i].algo);
  p.found = !p.candidates.empty();
  if (p.found) p.algo = p.candidates[0];
  return p;
}

lt::Status run_plan(LtDevice& ld, DeviceState& d, const Plan& p, const lt::Algo& algo,
                    const GemmCall& g, DevicePtr a, DevicePtr b, DevicePtr c,
                    CuStream* stream = nullptr, DevicePtr workspace = 0) {
  const lt::Api& A = lt::api();
  float f1 = 1, f0 = 0;
  double d1 = 1, d0 = 0;
  const void* alpha = g.dtype == DType::F64 ? static_cast<const void*>(&d1) : &f1;
  // A residual is cuBLASLt's C: D = A B + 1 * C.
  const void* beta = g.dtype == DType::F64 ? static_cast<const void*>(g.residual ? &d1 : &d0)
                                           : (g.residual ? &f1 : &f0);
  // The plan's descriptor is the device's, and calls on a device are serialized (the stream's
  // lock): the bias pointer is this call's until the next.
  if (g.bias) set_bias(p, g.bias, "a GEMM's bias");
  DevicePtr in_c = g.residual ? DevicePtr(g.residual) : c;
  return A.Matmul(ld.handle, p.desc, alpha, reinterpret_cast<const void*>(b), p.a,
                  reinterpret_cast<const void*>(a), p.b, beta, reinterpret_cast<const void*>(in_c),
                  p.c, reinterpret_cast<void*>(c), p.c, &algo,
                  reinterpret_cast<void*>(workspace ? workspace : ld.workspace->ptr), kWorkspace,
                  stream ? stream : d.raw_stream());
}

// A process's first GEMM pays cuBLASLt's one-time set-up inside the library (about 0.08 s on
// an H200 with the library already loaded) and each new kind of GEMM its kernels' loading: small
// f32 and bf16 ones run here, on a stream and workspace of their own, so the program's first
// step finds that done.
void warm_up(LtDevice& ld, DeviceState& d) {
  Stream stream;
  DeviceBuffer workspace(kWorkspace), data(3 * 64 * 64 * sizeof(float));
  for (DType t : {DType::F32, DType::BF16}) {
    GemmCall g{t, 64, 64, 64, {64, false}, {64, false}, 1, 0, 0, 0};
    Plan p = make_plan(ld, g, 16, 16, 16, allow_tf32(), "warm-up");
    const int64_t bytes = 64 * 64 * size_of(t);
    DevicePtr base = data.ptr();
    if (p.found)
      (void)run_plan(ld, d, p, p.algo, g, base, base + bytes, base + 2 * bytes, stream.get(),
                     workspace.ptr());
    const lt::Api& A = lt::api();
    for (lt::Layout l : {p.a, p.b, p.c})
      if (l) A.MatrixLayoutDestroy(l);
    if (p.desc) A.MatmulDescDestroy(p.desc);
  }
  stream.synchronize();
}

// Whether large GEMMs time the heuristic's candidates (EMBER_CUBLASLT_TUNE=1). Off by default:
// on an H200 the heuristic's first choice ran 8192^3 tf32 at 416 TFLOP/s and bf16 at 702, and
// the timed pick (three runs per candidate, best of two rounds) at 356 and 680 in a later
// run, since a short burst does not show how an algorithm holds its clocks when sustained.
bool tune_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("EMBER_CUBLASLT_TUNE");
    return e && std::string_view(e) == "1";
  }();
  return on;
}

// Times the heuristic's candidates on this call's operands (c is overwritten; beta is 0) once
// and keeps the fastest; a candidate that fails to launch is skipped.
void tune(LtDevice& ld, DeviceState& d, Plan& p, const GemmCall& g, DevicePtr a, DevicePtr b,
          DevicePtr c) {
  float best = INFINITY;
  size_t pick = 0;
  Event start, end;
  // Two rounds, the best of each candidate's: the first may run while the clocks ramp up.
  for (int round = 0; round < 2; ++round)
    for (size_t i = 0; i < p.candidates.size(); ++i) {
      if (run_plan(ld, d, p, p.candidates[i], g, a, b, c) != 0) continue;  // warm-up
      start.record_raw(d.raw_stream());
      bool ok = true;
      for (int r = 0; r < 3 && ok; ++r) ok = run_plan(ld, d, p, p.candidates[i], g, a, b, c) == 0;
      end.record_raw(d.raw_stream());
      end.synchronize();
      float ms = end.since(start);
      if (ok && ms < best) best = ms, pick = i;
    }
  p.algo = p.candidates[pick];
}

// The device's plan for `g` on these addresses, made (and timed, with EMBER_CUBLASLT_TUNE)
// the first time; nullptr for dtypes cuBLASLt does not take.
Plan* find_plan(DeviceState& d, const GemmCall& g, DevicePtr a, DevicePtr b, DevicePtr c,
                const std::string& shapes, bool may_tune) {
  bool blas = g.dtype == DType::F32 || g.dtype == DType::F64 || g.dtype == DType::F16 ||
              g.dtype == DType::BF16;
  if (!blas) return nullptr;
  LtDevice& ld = lt_device(d);
  bool tf32 = allow_tf32();
  int al_a = alignment(a), al_b = alignment(b), al_c = alignment(c);
  if (g.residual) al_c = std::min(al_c, alignment(g.residual));
  int64_t epilogue = (g.bias ? 1 : 0) | (g.residual ? 2 : 0) | (g.relu ? 4 : 0);
  int64_t al_bias = g.bias ? alignment(g.bias) : 0;
  PlanKey k{int64_t(g.dtype), tf32, g.m,  g.n,  g.k,  g.va.ld, g.va.col, g.vb.ld,  g.vb.col,
            g.batch,          g.sa, g.sb, g.sc, al_a, al_b,    al_c,     epilogue, al_bias};
  std::lock_guard lk(ld.mu);
  auto it = ld.plans.find(k);
  if (it == ld.plans.end())
    it = ld.plans.emplace(k, make_plan(ld, g, al_a, al_b, al_c, tf32, shapes)).first;
  Plan* plan = &it->second;
  if (may_tune && plan->found && !plan->tuned) {
    plan->tuned = true;
    double flops = 2.0 * double(g.m) * double(g.n) * double(g.k) * double(g.batch);
    // Timing overwrites c, which an epilogue's residual may be.
    if (tune_enabled() && !g.has_epilogue() && plan->candidates.size() > 1 && flops >= kTuneFlops)
      tune(ld, d, *plan, g, a, b, c);
  }
  return plan;
}

}  // namespace

void lt_gemm(DeviceState& d, const GemmCall& g, DevicePtr a, DevicePtr b, DevicePtr c,
             const std::string& shapes) {
  Plan* plan = find_plan(d, g, a, b, c, shapes, true);
  if (!plan || !plan->found) {
    // gemm_epilogue() said yes to every GEMM with an epilogue that reaches here.
    if (g.has_epilogue())
      throw DeviceError("cublasLtMatmul: no algorithm for a GEMM with an epilogue (" + shapes +
                        ")");
    return d.Runtime::gemm(g, a, b, c, shapes);
  }
  lt_check(run_plan(lt_device(d), d, *plan, plan->algo, g, a, b, c), "cublasLtMatmul", shapes);
}

bool lt_gemm_epilogue(DeviceState& d, const GemmCall& g, DevicePtr a, DevicePtr b, DevicePtr c) {
  // Bias and residual in the output's type: cuBLASLt's defaults.
  if (g.dtype != DType::F32 && g.dtype != DType::F16 && g.dtype != DType::BF16) return false;
  Plan* plan = find_plan(d, g, a, b, c, "epilogue", false);
  return plan && plan->found;
}

void preload_cublaslt(DeviceState& d) {
  const char* e = std::getenv("EMBER_CUDA_PRELOAD");
  if (e && std::string_view(e) == "0") return;
  // The library's loading and the handle's set-up take about 0.1 s, and a first GEMM as long
  // again (warm_up): done while the program builds its model and data, not in its first step.
  // A failure shows at the first matmul. (cuDNN's handle is made at the first convolution, on
  // the caller's thread: making it here too left the CNN's warm-cache first step on an H200 at
  // 0.12 s against 0.14 without, within the runs' spread, at the cost of loading cuDNN in
  // programs that never convolve.)
  // Detached, and waited for by the device's first read to the host (DeviceState::wait_preload).
  auto done = std::make_shared<std::promise<void>>();
  d.preloaded = done->get_future().share();
  std::thread([&d, done] {
    try {
      d.bind();
      LtDevice& ld = lt_device(d);
      warm_up(ld, d);
    } catch (...) {
    }
    done->set_value();
  }).detach();
}

}  // namespace ember::cuda::detail
