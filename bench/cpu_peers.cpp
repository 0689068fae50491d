// The native peers of cpu_bench: raw OpenBLAS sgemm (ember's matmul is its own GEMM unless
// ember is built with EMBER_BLAS=ON), oneDNN sgemm when built with it, and the
// memory-bandwidth references ("copy").
//
// "copy/<op>/<size>" is std::memcpy between two preallocated, already-touched buffers, moving
// the same number of bytes (read + written) as the op: a memcpy of n bytes reads n and writes
// n, so the reference for an op that moves B bytes copies B / 2 bytes. It runs on ember's own
// thread pool (one chunk per thread), so it differs from ember's kernel only in the loop.
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "bench/cpu_bench.h"
#include "ember/core/thread_pool.h"

#ifdef EMBER_BENCH_OPENBLAS
#include <cblas.h>
#endif
#ifdef EMBER_BENCH_ONEDNN
#include <dnnl.h>
#endif

namespace bench {

namespace {

using benchmark::State;

void copy_bytes(State& st, int64_t moved) {
  const int64_t n = moved / 2;
  std::unique_ptr<std::byte[]> src(new std::byte[n]), dst(new std::byte[n]);
  std::memset(src.get(), 1, n);  // touch every page before timing
  std::memset(dst.get(), 0, n);
  const int64_t per_thread = (n + ember::num_threads() - 1) / ember::num_threads();
  for (auto _ : st) {
    ember::parallel_for(n, per_thread, [&](int64_t b, int64_t e) {
      std::memcpy(dst.get() + b, src.get() + b, e - b);
    });
    benchmark::ClobberMemory();
  }
  set_bytes(st, 2.0 * n);
}

// `count` uniform values in [-1, 1).
[[maybe_unused]] std::vector<float> random_values(int64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> m(count);
  for (auto& v : m) v = u(rng);
  return m;
}

// Runs `op` per iteration; `error` (an op that could not be set up) skips the benchmark.
[[maybe_unused]] void time_op(State& st, const Op& op, const std::string& error) {
  if (!op) return st.SkipWithError(error.empty() ? "not set up" : error.c_str());
  try {
    for (auto _ : st) {
      op();
      benchmark::ClobberMemory();
    }
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
  }
}

#ifdef EMBER_BENCH_OPENBLAS
void openblas_matmul(State& st, MatmulSize s) {
  auto a = random_values(s.m * s.k, 1), b = random_values(s.k * s.n, 2);
  std::vector<float> c(s.m * s.n);
  for (auto _ : st) {
    cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans,
                s.m, s.n, s.k, 1.0f, a.data(), s.ta ? s.m : s.k, b.data(), s.tb ? s.k : s.n, 0.0f,
                c.data(), s.n);
    benchmark::ClobberMemory();
  }
  set_flop(st, s.flop());
}
#endif

#ifdef EMBER_BENCH_ONEDNN
}  // namespace

Op onednn_matmul_op(const MatmulSize& s, std::string* error) {
  struct Data {
    std::vector<float> a, b, c;
  };
  auto d = std::make_shared<Data>(Data{random_values(s.m * s.k, 1), random_values(s.k * s.n, 2),
                                       std::vector<float>(s.m * s.n)});
  *error = "";
  return [d, s] {
    // dnnl_sgemm is row-major.
    if (dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.0f, d->a.data(),
                   s.ta ? s.m : s.k, d->b.data(), s.tb ? s.k : s.n, 0.0f, d->c.data(),
                   s.n) != dnnl_success)
      throw std::runtime_error("dnnl_sgemm failed");
  };
}

namespace {

void onednn_matmul(State& st, MatmulSize s) {
  std::string error;
  time_op(st, onednn_matmul_op(s, &error), error);
  set_flop(st, s.flop());
}

// A CPU engine and its stream, for one benchmark.
struct Engine {
  Engine() {
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) == dnnl_success)
      dnnl_stream_create(&stream, eng, dnnl_stream_default_flags);
  }
  ~Engine() {
    if (stream) dnnl_stream_destroy(stream);
    if (eng) dnnl_engine_destroy(eng);
  }
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  bool ok() const { return stream != nullptr; }
  dnnl_engine_t eng = nullptr;
  dnnl_stream_t stream = nullptr;
};

// Runs `prim` on `args` to completion; throws when oneDNN fails.
void execute(dnnl_primitive_t prim, dnnl_stream_t stream,
             const std::vector<dnnl_exec_arg_t>& args) {
  if (dnnl_primitive_execute(prim, stream, int(args.size()), args.data()) != dnnl_success)
    throw std::runtime_error("dnnl_primitive_execute failed");
  dnnl_stream_wait(stream);
}

// Whether oneDNN has a bf16 matmul for this CPU (it declines the descriptor without AVX-512
// BF16 or AMX), asked once with a small product.
bool onednn_has_bf16_matmul() {
  const Engine engine;
  if (!engine.ok()) return false;
  dnnl_dims_t dims = {16, 16};
  dnnl_memory_desc_t md;
  dnnl_memory_desc_init_by_tag(&md, 2, dims, dnnl_bf16, dnnl_ab);
  dnnl_matmul_desc_t mm;
  dnnl_primitive_desc_t pd = nullptr;
  const bool ok =
      dnnl_matmul_desc_init(&mm, &md, &md, nullptr, &md) == dnnl_success &&
      dnnl_primitive_desc_create(&pd, &mm, nullptr, engine.eng, nullptr) == dnnl_success;
  if (pd) dnnl_primitive_desc_destroy(pd);
  return ok;
}

// A primitive (a convolution, a matmul) with its memories, destroyed with it.
struct Primitive {
  Engine engine;
  dnnl_primitive_desc_t pd = nullptr;
  dnnl_primitive_t prim = nullptr;
  dnnl_memory_t src = nullptr, w = nullptr, dst = nullptr;
  Primitive() = default;
  Primitive(const Primitive&) = delete;
  Primitive& operator=(const Primitive&) = delete;
  ~Primitive() {
    for (dnnl_memory_t m : {src, w, dst})
      if (m) dnnl_memory_destroy(m);
    if (prim) dnnl_primitive_destroy(prim);
    if (pd) dnnl_primitive_desc_destroy(pd);
  }
};

// oneDNN's matmul primitive on a of type ta and b of tb into c of tc (bf16 x bf16 -> bf16: its
// AMX or AVX-512 BF16 kernels; u8 x s8 -> s32: its VNNI or AMX int8 ones), operands in plain
// row-major or transposed layouts as ember's, filled with random values (uniform in [-1, 1) for
// bf16, random bytes for the 8-bit types): the primitive's execution only.
Op onednn_typed_matmul_op(const MatmulSize& s, dnnl_data_type_t ta, dnnl_data_type_t tb,
                          dnnl_data_type_t tc, std::string* error) {
  auto mp = std::make_shared<Primitive>();
  auto fail = [&](const char* what) {
    *error = what;
    return Op{};
  };
  if (!mp->engine.ok()) return fail("oneDNN engine");
  dnnl_engine_t eng = mp->engine.eng;
  dnnl_dims_t a_dims = {s.m, s.k}, b_dims = {s.k, s.n}, c_dims = {s.m, s.n};
  dnnl_memory_desc_t a_md, b_md, c_md;
  dnnl_memory_desc_init_by_tag(&a_md, 2, a_dims, ta, s.ta ? dnnl_ba : dnnl_ab);
  dnnl_memory_desc_init_by_tag(&b_md, 2, b_dims, tb, s.tb ? dnnl_ba : dnnl_ab);
  dnnl_memory_desc_init_by_tag(&c_md, 2, c_dims, tc, dnnl_ab);
  dnnl_matmul_desc_t md;
  if (dnnl_matmul_desc_init(&md, &a_md, &b_md, nullptr, &c_md) != dnnl_success ||
      dnnl_primitive_desc_create(&mp->pd, &md, nullptr, eng, nullptr) != dnnl_success)
    return fail("oneDNN matmul descriptor for these types");
  if (dnnl_memory_create(&mp->src, &a_md, eng, DNNL_MEMORY_ALLOCATE) != dnnl_success ||
      dnnl_memory_create(&mp->w, &b_md, eng, DNNL_MEMORY_ALLOCATE) != dnnl_success ||
      dnnl_memory_create(&mp->dst, &c_md, eng, DNNL_MEMORY_ALLOCATE) != dnnl_success)
    return fail("oneDNN memory");
  std::mt19937 g(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto [mem, desc, t] :
       {std::tuple<dnnl_memory_t, const dnnl_memory_desc_t*, dnnl_data_type_t>{mp->src, &a_md, ta},
        {mp->w, &b_md, tb}}) {
    void* p = nullptr;
    dnnl_memory_get_data_handle(mem, &p);
    const size_t bytes = dnnl_memory_desc_get_size(desc);
    if (t == dnnl_bf16) {
      auto* h = static_cast<uint16_t*>(p);
      for (size_t i = 0; i < bytes / 2; ++i) {
        const float f = u(g);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        h[i] = uint16_t(bits >> 16);
      }
    } else {
      auto* h = static_cast<uint8_t*>(p);
      for (size_t i = 0; i < bytes; ++i) h[i] = uint8_t(byte(g));
    }
  }
  if (dnnl_primitive_create(&mp->prim, mp->pd) != dnnl_success) return fail("oneDNN primitive");
  *error = "";
  return [mp, args = std::vector<dnnl_exec_arg_t>{
                  {DNNL_ARG_SRC, mp->src}, {DNNL_ARG_WEIGHTS, mp->w}, {DNNL_ARG_DST, mp->dst}}] {
    execute(mp->prim, mp->engine.stream, args);
  };
}

void onednn_matmul_bf16(State& st, MatmulSize s) {
  std::string error;
  time_op(st, onednn_typed_matmul_op(s, dnnl_bf16, dnnl_bf16, dnnl_bf16, &error), error);
  set_flop(st, s.flop());
}

}  // namespace

// oneDNN's convolution forward (inference, its algorithm of choice) of element types ts x tw ->
// td, the weight already in the layout oneDNN picks (a model's weight is reordered once): the
// primitive's execution only. The input and output in NCHW, as ember takes them, or (`blocked`)
// in the layouts oneDNN picks (channel-blocked: its best case, a network kept in them
// throughout, reorders not counted).
Op onednn_typed_conv2d_op(const Conv2dSize& c, bool blocked, dnnl_data_type_t ts,
                          dnnl_data_type_t tw, dnnl_data_type_t td, std::string* error) {
  auto cp = std::make_shared<Primitive>();
  auto fail = [&](const char* what) {
    *error = what;
    return Op{};
  };
  if (!cp->engine.ok()) return fail("oneDNN engine");
  dnnl_engine_t eng = cp->engine.eng;
  const int64_t pad = (c.k - 1) / 2;
  dnnl_dims_t src_dims = {c.n, c.c_in, c.hw, c.hw}, dst_dims = {c.n, c.c_out, c.hw, c.hw};
  dnnl_dims_t w_dims = {c.c_out, c.c_in, c.k, c.k}, strides = {1, 1}, padding = {pad, pad};
  dnnl_memory_desc_t src_md, dst_md, w_any;
  const dnnl_format_tag_t io = blocked ? dnnl_format_tag_any : dnnl_nchw;
  dnnl_memory_desc_init_by_tag(&src_md, 4, src_dims, ts, io);
  dnnl_memory_desc_init_by_tag(&dst_md, 4, dst_dims, td, io);
  dnnl_memory_desc_init_by_tag(&w_any, 4, w_dims, tw, dnnl_format_tag_any);
  dnnl_convolution_desc_t cd;
  if (dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_auto,
                                         &src_md, &w_any, nullptr, &dst_md, strides, padding,
                                         padding) != dnnl_success ||
      dnnl_primitive_desc_create(&cp->pd, &cd, nullptr, eng, nullptr) != dnnl_success)
    return fail("oneDNN convolution descriptor");
  const dnnl_memory_desc_t* w_md = dnnl_primitive_desc_query_md(cp->pd, dnnl_query_weights_md, 0);
  src_md = *dnnl_primitive_desc_query_md(cp->pd, dnnl_query_src_md, 0);
  dst_md = *dnnl_primitive_desc_query_md(cp->pd, dnnl_query_dst_md, 0);
  if (dnnl_memory_create(&cp->src, &src_md, eng, DNNL_MEMORY_ALLOCATE) != dnnl_success ||
      dnnl_memory_create(&cp->w, w_md, eng, DNNL_MEMORY_ALLOCATE) != dnnl_success ||
      dnnl_memory_create(&cp->dst, &dst_md, eng, DNNL_MEMORY_ALLOCATE) != dnnl_success)
    return fail("oneDNN memory");
  std::mt19937 g(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_int_distribution<int> byte(0, 127);
  for (auto [m, md, t] : {std::tuple<dnnl_memory_t, const dnnl_memory_desc_t*, dnnl_data_type_t>{
                              cp->src, &src_md, ts},
                          {cp->w, w_md, tw}}) {
    void* p = nullptr;
    dnnl_memory_get_data_handle(m, &p);
    const size_t bytes = dnnl_memory_desc_get_size(md);
    if (t == dnnl_f32) {
      float* f = static_cast<float*>(p);
      for (size_t i = 0; i < bytes / sizeof(float); ++i) f[i] = u(g);
    } else {
      auto* h = static_cast<uint8_t*>(p);
      for (size_t i = 0; i < bytes; ++i) h[i] = uint8_t(byte(g));
    }
  }
  if (dnnl_primitive_create(&cp->prim, cp->pd) != dnnl_success) return fail("oneDNN primitive");
  *error = "";
  return [cp, args = std::vector<dnnl_exec_arg_t>{
                  {DNNL_ARG_SRC, cp->src}, {DNNL_ARG_WEIGHTS, cp->w}, {DNNL_ARG_DST, cp->dst}}] {
    execute(cp->prim, cp->engine.stream, args);
  };
}

// oneDNN's u8 x s8 -> s32 matmul (onednn_typed_matmul_op).
Op onednn_matmul_u8s8_op(const MatmulSize& s, std::string* error) {
  return onednn_typed_matmul_op(s, dnnl_u8, dnnl_s8, dnnl_s32, error);
}

Op onednn_conv2d_op(const Conv2dSize& c, bool blocked, std::string* error) {
  return onednn_typed_conv2d_op(c, blocked, dnnl_f32, dnnl_f32, dnnl_f32, error);
}

// oneDNN's u8 x s8 -> s32 convolution (onednn_typed_conv2d_op).
Op onednn_conv2d_u8s8_op(const Conv2dSize& c, bool blocked, std::string* error) {
  return onednn_typed_conv2d_op(c, blocked, dnnl_u8, dnnl_s8, dnnl_s32, error);
}

namespace {

void onednn_matmul_u8s8(State& st, MatmulSize s) {
  std::string error;
  time_op(st, onednn_matmul_u8s8_op(s, &error), error);
  set_flop(st, s.flop());
}

void onednn_conv2d(State& st, Conv2dSize c, bool blocked) {
  std::string error;
  time_op(st, onednn_conv2d_op(c, blocked, &error), error);
  set_flop(st, c.flop());
}
#endif

template <class... Args>
void reg(const std::string& name, benchmark::TimeUnit unit, Args&&... args) {
  benchmark::RegisterBenchmark(name.c_str(), std::forward<Args>(args)...)
      ->UseRealTime()
      ->Unit(unit);
}

}  // namespace

#ifndef EMBER_BENCH_ONEDNN
Op onednn_matmul_op(const MatmulSize&, std::string* error) {
  *error = "built without oneDNN";
  return {};
}
Op onednn_conv2d_op(const Conv2dSize&, bool, std::string* error) {
  *error = "built without oneDNN";
  return {};
}
Op onednn_matmul_u8s8_op(const MatmulSize&, std::string* error) {
  *error = "built without oneDNN";
  return {};
}
Op onednn_conv2d_u8s8_op(const Conv2dSize&, bool, std::string* error) {
  *error = "built without oneDNN";
  return {};
}
#endif

void register_copy_benchmarks() {
  constexpr int64_t kF32 = sizeof(float);
  reg("copy/add/" + std::to_string(kElems >> 20) + "M", benchmark::kMillisecond, copy_bytes,
      3 * kF32 * kElems);
  reg("copy/sum/" + std::to_string(kSumElems >> 20) + "M", benchmark::kMillisecond, copy_bytes,
      kF32 * kSumElems);
  for (const auto& d : kDepthwiseSizes)
    reg(std::string("copy/depthwise_conv2d/") + d.name, benchmark::kMillisecond, copy_bytes,
        d.bytes());
}

void register_blas_benchmarks() {
  using benchmark::kMillisecond;
#ifdef EMBER_BENCH_OPENBLAS
  benchmark::AddCustomContext("openblas_threads", std::to_string(openblas_get_num_threads()));
  benchmark::AddCustomContext("openblas_core", openblas_get_corename());
  for (const MatmulSize& m : kMatmulSizes)
    reg(std::string("openblas/matmul/") + m.name, kMillisecond, openblas_matmul, m);
#endif
#ifdef EMBER_BENCH_ONEDNN
  for (const MatmulSize& m : kMatmulSizes)
    reg(std::string("onednn/matmul/") + m.name, kMillisecond, onednn_matmul, m);
  if (onednn_has_bf16_matmul()) {
    for (const MatmulSize& m : kMatmulSizes)
      reg(std::string("onednn/matmul_bf16/") + m.name, kMillisecond, onednn_matmul_bf16, m);
  } else {
    std::fprintf(stderr,
                 "cpu_peers: oneDNN has no bf16 matmul on this CPU (it needs AVX-512 "
                 "BF16 or AMX); onednn/matmul_bf16 is not run\n");
  }
  for (const MatmulSize& m : kMatmulSizes)
    reg(std::string("onednn/matmul_u8s8/") + m.name, kMillisecond, onednn_matmul_u8s8, m);
  for (const Conv2dSize& c : kConv2dSizes) {
    reg(std::string("onednn/conv2d/") + c.name, kMillisecond, onednn_conv2d, c, false);
    reg(std::string("onednn_blocked/conv2d/") + c.name, kMillisecond, onednn_conv2d, c, true);
  }
#endif
}

}  // namespace bench
