// ember's CPU ops under Google Benchmark. Run through scripts/bench.sh cpu, which runs the
// PyTorch peer in the same run and merges both into bench/out/cpu.json; see
// docs/benchmarks.md. Every op here returns a new tensor (inputs are kept alive by the
// benchmark, so ember cannot reuse their buffers), as the PyTorch peer does.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "bench/cpu_bench.h"
#include "bench/torch_server.h"
#include "ember/core/thread_pool.h"
#include "ember/ember.h"

namespace {

using namespace ember;
using bench::kElems;
using bench::kSquare;
using benchmark::State;

constexpr double kF32 = sizeof(float);

template <Backend B, int D>
Tensor<B, D> uniform(Shape s) {
  return Tensor<B, D>::random(std::move(s), Distribution::uniform(-1, 1));
}

// Per-op overhead: the kernel is trivial, so this is the cost of the path from the Tensor
// API down to the kernel and back (shape inference, allocation, dispatch).
template <Backend B>
void bm_add_tiny(State& st) {
  auto a = uniform<B, 1>({bench::kTiny}), b = uniform<B, 1>({bench::kTiny});
  for (auto _ : st) {
    auto c = a + b;
    benchmark::DoNotOptimize(c);
  }
  bench::set_ops(st, 1);
}

void bm_add(State& st) {
  auto a = uniform<Cpu, 1>({kElems}), b = uniform<Cpu, 1>({kElems});
  for (auto _ : st) {
    auto c = a + b;
    benchmark::DoNotOptimize(c);
  }
  bench::set_bytes(st, 3 * kF32 * kElems);
}

void bm_exp(State& st) {
  auto x = uniform<Cpu, 1>({kElems});
  for (auto _ : st) {
    auto y = x.exp();
    benchmark::DoNotOptimize(y);
  }
  bench::set_bytes(st, 2 * kF32 * kElems);
}

// A unary function on 16M floats (x in [-1, 1): uniform).
template <Tensor<Cpu, 1> (*F)(const Tensor<Cpu, 1>&)>
void bm_unary(State& st) {
  auto x = uniform<Cpu, 1>({kElems});
  for (auto _ : st) {
    auto y = F(x);
    benchmark::DoNotOptimize(y);
  }
  bench::set_bytes(st, 2 * kF32 * kElems);
}
Tensor<Cpu, 1> gelu_of(const Tensor<Cpu, 1>& x) { return activation::gelu(x); }
Tensor<Cpu, 1> erf_of(const Tensor<Cpu, 1>& x) { return x.erf(); }
Tensor<Cpu, 1> sin_of(const Tensor<Cpu, 1>& x) { return (x * 100.0).sin(); }
Tensor<Cpu, 1> log1p_of(const Tensor<Cpu, 1>& x) { return x.log1p(); }

// pow of 16M positive floats (|u| + 0.01) to 16M exponents in [-3, 3).
void bm_pow(State& st) {
  auto x = uniform<Cpu, 1>({kElems}).abs() + 0.01, y = uniform<Cpu, 1>({kElems}) * 3.0;
  for (auto _ : st) {
    auto z = x.pow(y);
    benchmark::DoNotOptimize(z);
  }
  bench::set_bytes(st, 3 * kF32 * kElems);
}

void bm_sum(State& st) {
  auto x = uniform<Cpu, 1>({bench::kSumElems});
  for (auto _ : st) {
    auto s = x.sum();
    benchmark::DoNotOptimize(s);
  }
  bench::set_bytes(st, kF32 * bench::kSumElems);
}

void bm_sum_dim(State& st) {
  auto x = uniform<Cpu, 2>({kSquare, kSquare});
  for (auto _ : st) {
    auto s = x.sum_dim(1);
    benchmark::DoNotOptimize(s);
  }
  bench::set_bytes(st, kF32 * (kSquare * kSquare + kSquare));
}

void bm_softmax(State& st) {
  auto x = Tensor<Cpu, 2>::random({bench::kSoftmaxRows, bench::kSoftmaxCols},
                                  Distribution::normal(0, 1));
  for (auto _ : st) {
    auto y = activation::softmax(x, 1);
    benchmark::DoNotOptimize(y);
  }
  // The least traffic any softmax can have: read x once, write y once.
  bench::set_bytes(st, 2 * kF32 * bench::kSoftmaxRows * bench::kSoftmaxCols);
}

// layer_norm over the last dim of the softmax's shape, with a weight and a bias.
void bm_layer_norm(State& st) {
  auto x = Tensor<Cpu, 2>::random({bench::kSoftmaxRows, bench::kSoftmaxCols},
                                  Distribution::normal(0, 1));
  auto gamma = uniform<Cpu, 1>({bench::kSoftmaxCols}),
       beta = uniform<Cpu, 1>({bench::kSoftmaxCols});
  for (auto _ : st) {
    auto y = layer_norm(x, gamma, beta, 1e-5);
    benchmark::DoNotOptimize(y);
  }
  bench::set_bytes(st, 2 * kF32 * bench::kSoftmaxRows * bench::kSoftmaxCols);
}

// ember has no contiguous(); flattening a transposed view cannot be a view, so it copies.
void bm_transpose_copy(State& st) {
  auto x = uniform<Cpu, 2>({kSquare, kSquare});
  for (auto _ : st) {
    auto y = x.transpose().reshape<1>({kSquare * kSquare});
    benchmark::DoNotOptimize(y);
  }
  bench::set_bytes(st, 2 * kF32 * kSquare * kSquare);
}

bench::Op matmul_op(const bench::MatmulSize& s) {
  auto a = s.ta ? uniform<Cpu, 2>({s.k, s.m}).transpose() : uniform<Cpu, 2>({s.m, s.k});
  auto b = s.tb ? uniform<Cpu, 2>({s.n, s.k}).transpose() : uniform<Cpu, 2>({s.k, s.n});
  return [a, b] {
    auto c = a.matmul(b);
    benchmark::DoNotOptimize(c);
  };
}
void bm_matmul(State& st, bench::MatmulSize s) {
  const bench::Op op = matmul_op(s);
  for (auto _ : st) op();
  bench::set_flop(st, s.flop());
}

void bm_matmul_bf16(State& st, bench::MatmulSize s) {
  auto a = (s.ta ? uniform<Cpu, 2>({s.k, s.m}).transpose() : uniform<Cpu, 2>({s.m, s.k}))
               .cast(DType::BF16);
  auto b = (s.tb ? uniform<Cpu, 2>({s.n, s.k}).cast(DType::BF16).transpose()
                 : uniform<Cpu, 2>({s.k, s.n}).cast(DType::BF16));
  for (auto _ : st) {
    auto c = a.matmul(b);
    benchmark::DoNotOptimize(c);
  }
  bench::set_flop(st, s.flop());
}

// u8 x i8 -> i32 (int_matmul): the 8-bit products of quantized inference.
bench::Op matmul_u8s8_op(const bench::MatmulSize& s) {
  auto bytes = [](Shape shape, double scale, double offset, DType t) {
    return (uniform<Cpu, 2>(std::move(shape)) * scale + offset).int_(t);
  };
  auto a = s.ta ? bytes({s.k, s.m}, 127, 128, DType::U8).transpose()
                : bytes({s.m, s.k}, 127, 128, DType::U8);
  auto b = s.tb ? bytes({s.n, s.k}, 127, 0, DType::I8).transpose()
                : bytes({s.k, s.n}, 127, 0, DType::I8);
  return [a, b] {
    auto c = int_matmul(a, b);
    benchmark::DoNotOptimize(c);
  };
}
void bm_matmul_u8s8(State& st, bench::MatmulSize s) {
  const bench::Op op = matmul_u8s8_op(s);
  for (auto _ : st) op();
  bench::set_flop(st, s.flop());
}

bench::Op conv2d_op(const bench::Conv2dSize& c) {
  auto x = uniform<Cpu, 4>({c.n, c.c_in, c.hw, c.hw});
  auto w = uniform<Cpu, 4>({c.c_out, c.c_in, c.k, c.k});
  return [x, w, o = ConvOptions{.padding = {(c.k - 1) / 2}}] {
    auto y = conv2d(x, w, o);
    benchmark::DoNotOptimize(y);
  };
}
// u8 x i8 -> i32 (int_conv): a quantized network's convolutions.
bench::Op conv2d_u8s8_op(const bench::Conv2dSize& c) {
  auto bytes = [](Shape shape, double scale, double offset, DType t) {
    return (uniform<Cpu, 4>(std::move(shape)) * scale + offset).int_(t);
  };
  auto x = bytes({c.n, c.c_in, c.hw, c.hw}, 127, 128, DType::U8);
  auto w = bytes({c.c_out, c.c_in, c.k, c.k}, 127, 0, DType::I8);
  return [x, w, o = ConvOptions{.padding = {(c.k - 1) / 2}}] {
    auto y = int_conv(x, w, o);
    benchmark::DoNotOptimize(y);
  };
}

void bm_conv2d(State& st, bench::Conv2dSize c) {
  const bench::Op op = conv2d_op(c);
  for (auto _ : st) op();
  bench::set_flop(st, c.flop());
}

void bm_attention(State& st, bench::AttentionSize a) {
  auto q = uniform<Cpu, 3>({a.heads, a.len, a.d}), k = uniform<Cpu, 3>({a.heads, a.len, a.d}),
       v = uniform<Cpu, 3>({a.heads, a.len, a.d});
  for (auto _ : st) {
    auto y = scaled_dot_product_attention(q, k, v, {.causal = a.causal});
    benchmark::DoNotOptimize(y);
  }
  // q k^T and P v over the (query, key) pairs that are attended.
  double pairs = a.causal ? a.len * (a.len + 1) / 2.0 : double(a.len) * a.len;
  bench::set_flop(st, 4.0 * a.heads * pairs * a.d);
}

void bm_max_pool2d(State& st) {
  using namespace bench;
  auto x = uniform<Cpu, 4>({kPoolN, kPoolC, kPoolHW, kPoolHW});
  PoolOptions o{.stride = {2}, .padding = {1}};
  for (auto _ : st) {
    auto y = max_pool2d(x, {3, 3}, o);
    benchmark::DoNotOptimize(y);
  }
  int64_t out = kPoolN * kPoolC * (kPoolHW / 2) * (kPoolHW / 2);
  bench::set_bytes(st, kF32 * (kPoolN * kPoolC * kPoolHW * kPoolHW + out));
}

void bm_depthwise_conv2d(State& st, const bench::DepthwiseSize& d) {
  using namespace bench;
  auto x = uniform<Cpu, 4>({d.n, d.c, d.hw, d.hw});
  auto w = uniform<Cpu, 4>({d.c, 1, d.k, d.k});
  ConvOptions o{.stride = {d.stride}, .padding = {d.k / 2}, .groups = d.c};
  for (auto _ : st) {
    auto y = conv2d(x, w, o);
    benchmark::DoNotOptimize(y);
  }
  bench::set_bytes(st, d.bytes());
}

// The same on 8-bit integers (int_conv with groups: a quantized MobileNet's depthwise convs).
void bm_depthwise_conv2d_u8s8(State& st, const bench::DepthwiseSize& d) {
  using namespace bench;
  auto x = (uniform<Cpu, 4>({d.n, d.c, d.hw, d.hw}) * 127 + 128).int_(DType::U8);
  auto w = (uniform<Cpu, 4>({d.c, 1, d.k, d.k}) * 127).int_(DType::I8);
  ConvOptions o{.stride = {d.stride}, .padding = {d.k / 2}, .groups = d.c};
  for (auto _ : st) {
    auto y = int_conv(x, w, o);
    benchmark::DoNotOptimize(y);
  }
  bench::set_bytes(st, d.bytes());
}

void reg(const std::string& name, void (*fn)(State&), benchmark::TimeUnit unit) {
  benchmark::RegisterBenchmark(name.c_str(), fn)->UseRealTime()->Unit(unit);
}

// Registration order is run order (see main): the tiny op first, matmul apart and last.
void register_ember_benchmarks() {
  using benchmark::kMicrosecond;
  using benchmark::kMillisecond;
  const std::string big = std::to_string(kElems >> 20) + "M";
  const std::string sq = std::to_string(kSquare) + "x" + std::to_string(kSquare);
  reg("cpu/add/" + std::to_string(bench::kTiny), bm_add_tiny<Cpu>, kMicrosecond);
  reg("dispatch/add/" + std::to_string(bench::kTiny), bm_add_tiny<Dispatch>, kMicrosecond);
  reg("cpu/add/" + big, bm_add, kMillisecond);
  reg("cpu/exp/" + big, bm_exp, kMillisecond);
  reg("cpu/gelu/" + big, bm_unary<gelu_of>, kMillisecond);
  reg("cpu/erf/" + big, bm_unary<erf_of>, kMillisecond);
  reg("cpu/sin100x/" + big, bm_unary<sin_of>, kMillisecond);
  reg("cpu/log1p/" + big, bm_unary<log1p_of>, kMillisecond);
  reg("cpu/pow/" + big, bm_pow, kMillisecond);
  reg("cpu/sum/" + std::to_string(bench::kSumElems >> 20) + "M", bm_sum, kMillisecond);
  reg("cpu/sum_dim/" + sq, bm_sum_dim, kMillisecond);
  reg("cpu/softmax/" + std::to_string(bench::kSoftmaxRows) + "x" +
          std::to_string(bench::kSoftmaxCols),
      bm_softmax, kMillisecond);
  reg("cpu/layer_norm/" + std::to_string(bench::kSoftmaxRows) + "x" +
          std::to_string(bench::kSoftmaxCols),
      bm_layer_norm, kMillisecond);
  reg("cpu/transpose_copy/" + sq, bm_transpose_copy, kMillisecond);
  reg("cpu/max_pool2d/" + std::to_string(bench::kPoolN) + "x" + std::to_string(bench::kPoolC) +
          "x" + std::to_string(bench::kPoolHW) + "x" + std::to_string(bench::kPoolHW) + "_k3s2",
      bm_max_pool2d, kMillisecond);
  for (const auto& d : bench::kDepthwiseSizes)
    benchmark::RegisterBenchmark((std::string("cpu/depthwise_conv2d/") + d.name).c_str(),
                                 bm_depthwise_conv2d, d)
        ->UseRealTime()
        ->Unit(kMillisecond);
  for (const auto& d : bench::kDepthwiseSizes)
    benchmark::RegisterBenchmark((std::string("cpu/depthwise_conv2d_u8s8/") + d.name).c_str(),
                                 bm_depthwise_conv2d_u8s8, d)
        ->UseRealTime()
        ->Unit(kMillisecond);
}

// Convolutions are GEMM-bound: they run after the bandwidth benchmarks, beside matmul.
void register_ember_conv_benchmarks() {
  for (const auto& c : bench::kConv2dSizes)
    benchmark::RegisterBenchmark((std::string("cpu/conv2d/") + c.name).c_str(), bm_conv2d, c)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  for (const auto& c : bench::kConv2dSizes)
    benchmark::RegisterBenchmark((std::string("cpu/conv2d_u8s8/") + c.name).c_str(),
                                 [](State& st, bench::Conv2dSize c) {
                                   const bench::Op op = conv2d_u8s8_op(c);
                                   for (auto _ : st) op();
                                   bench::set_flop(st, c.flop());
                                 },
                                 c)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  for (const auto& a : bench::kAttentionSizes)
    benchmark::RegisterBenchmark((std::string("cpu/attention/") + a.name).c_str(), bm_attention, a)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
}

void register_ember_matmul_benchmarks() {
  for (const bench::MatmulSize& m : bench::kMatmulSizes)
    benchmark::RegisterBenchmark((std::string("cpu/matmul/") + m.name).c_str(), bm_matmul, m)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  for (const bench::MatmulSize& m : bench::kMatmulSizes)
    benchmark::RegisterBenchmark((std::string("cpu/matmul_bf16/") + m.name).c_str(), bm_matmul_bf16,
                                 m)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  for (const bench::MatmulSize& m : bench::kMatmulSizes)
    benchmark::RegisterBenchmark((std::string("cpu/matmul_u8s8/") + m.name).c_str(), bm_matmul_u8s8,
                                 m)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
}

// The paired comparisons against oneDNN, and against PyTorch where `torch` is given: every
// matmul and conv2d size whose "<op>/<size>" `filter` finds (see cpu_paired.cpp); only those are
// set up.
std::vector<bench::Paired> paired_rows(const std::regex& filter, bench::TorchServer* torch) {
  std::vector<bench::Paired> pairs;
  std::string error;
  auto peer = [&](std::vector<bench::PairedPeer>& peers, const char* who, bench::Op op) {
    if (op)
      peers.push_back({who, std::move(op), {}});
    else
      std::fprintf(stderr, "paired: no %s peer: %s\n", who, error.c_str());
  };
  auto torch_peer = [&](bench::Paired& p) {
    if (!torch) return;
    if (!torch->has(p.name)) {
      std::fprintf(stderr, "paired: no torch peer for %s\n", p.name.c_str());
      return;
    }
    p.peers.push_back({"torch", {}, [torch, name = p.name](double batch_ms, double gap_ms) {
                         return torch->batch(name, batch_ms, gap_ms);
                       }});
  };
  for (const bench::MatmulSize& m : bench::kMatmulSizes) {
    if (!std::regex_search(std::string("matmul/") + m.name, filter)) continue;
    bench::Paired p{std::string("matmul/") + m.name, m.flop(), matmul_op(m), {}};
    peer(p.peers, "onednn", bench::onednn_matmul_op(m, &error));
    torch_peer(p);
    if (!p.peers.empty()) pairs.push_back(std::move(p));
  }
  for (const bench::MatmulSize& m : bench::kMatmulSizes) {
    if (!std::regex_search(std::string("matmul_u8s8/") + m.name, filter)) continue;
    bench::Paired p{std::string("matmul_u8s8/") + m.name, m.flop(), matmul_u8s8_op(m), {}};
    peer(p.peers, "onednn", bench::onednn_matmul_u8s8_op(m, &error));
    if (!p.peers.empty()) pairs.push_back(std::move(p));
  }
  for (const bench::Conv2dSize& c : bench::kConv2dSizes) {
    if (!std::regex_search(std::string("conv2d/") + c.name, filter)) continue;
    bench::Paired p{std::string("conv2d/") + c.name, c.flop(), conv2d_op(c), {}};
    peer(p.peers, "onednn", bench::onednn_conv2d_op(c, false, &error));
    peer(p.peers, "onednn_blocked", bench::onednn_conv2d_op(c, true, &error));
    torch_peer(p);
    if (!p.peers.empty()) pairs.push_back(std::move(p));
  }
  for (const bench::Conv2dSize& c : bench::kConv2dSizes) {
    if (!std::regex_search(std::string("conv2d_u8s8/") + c.name, filter)) continue;
    bench::Paired p{std::string("conv2d_u8s8/") + c.name, c.flop(), conv2d_u8s8_op(c), {}};
    // (oneDNN's int8 convolution in NCHW is its reference loop, seconds a call: not a peer)
    peer(p.peers, "onednn_blocked", bench::onednn_conv2d_u8s8_op(c, true, &error));
    if (!p.peers.empty()) pairs.push_back(std::move(p));
  }
  return pairs;
}

// The value of "--name=value" in argv, removed from it; `fallback` when absent.
std::string take_flag(int& argc, char** argv, const std::string& name, std::string fallback) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).starts_with(prefix)) {
      std::string v = argv[i] + prefix.size();
      std::copy(argv + i + 1, argv + argc, argv + i);
      --argc;
      return v;
    }
  return fallback;
}

}  // namespace

// cpu_bench [Google Benchmark flags]: the suite's rows.
// cpu_bench --paired=ROUNDS [--paired_out=FILE.json] [--paired_batch_ms=40] [--paired_gap_ms=50]
//           [--paired_filter=REGEX] [--paired_torch=bench/peer_torch_cpu.py]
//           [--paired_python=/usr/bin/python3]:
// matmul and conv2d (those whose "<op>/<size>" REGEX finds) against oneDNN in turn, and against
// PyTorch (that script, run by that interpreter, by default Debian's with python3-torch) when
// given (cpu_paired.cpp) instead.
int main(int argc, char** argv) {
  if (const std::string rounds = take_flag(argc, argv, "paired", ""); !rounds.empty()) {
    const std::string out = take_flag(argc, argv, "paired_out", "");
    const std::string batch = take_flag(argc, argv, "paired_batch_ms", "40");
    const std::string gap = take_flag(argc, argv, "paired_gap_ms", "50");
    const std::string pattern = take_flag(argc, argv, "paired_filter", ".*");
    const std::string torch_script = take_flag(argc, argv, "paired_torch", "");
    const std::string python = take_flag(argc, argv, "paired_python", "/usr/bin/python3");
    if (argc > 1) {
      std::fprintf(stderr, "cpu_bench: unknown argument %s with --paired\n", argv[1]);
      return 2;
    }
    int n_rounds = 0;
    double batch_ms = 0, gap_ms = 0;
    std::regex filter;
    try {
      n_rounds = std::stoi(rounds);
      batch_ms = std::stod(batch);
      gap_ms = std::stod(gap);
      filter = std::regex(pattern);
    } catch (const std::exception&) {
      std::fprintf(stderr,
                   "cpu_bench: --paired=%s --paired_batch_ms=%s --paired_gap_ms=%s "
                   "--paired_filter=%s: a count, two numbers and a regular expression expected\n",
                   rounds.c_str(), batch.c_str(), gap.c_str(), pattern.c_str());
      return 2;
    }
    if (n_rounds < 1 || batch_ms < 0 || gap_ms < 0) {
      std::fprintf(stderr, "cpu_bench: --paired takes 1 round or more, times of 0 ms or more\n");
      return 2;
    }
    std::unique_ptr<bench::TorchServer> torch;
    if (!torch_script.empty()) try {
        torch = std::make_unique<bench::TorchServer>(python, torch_script, ember::num_threads());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "cpu_bench: no PyTorch peer: %s\n", e.what());
      }
    const auto pairs = paired_rows(filter, torch.get());
    if (pairs.empty()) {
      std::fprintf(stderr,
                   "cpu_bench: nothing to pair (built without oneDNN and no PyTorch peer, or the "
                   "filter matches no matmul or conv2d size)\n");
      return 0;
    }
    return bench::run_paired(pairs, n_rounds, batch_ms, gap_ms, out);
  }
  register_ember_benchmarks();
  bench::register_copy_benchmarks();
  register_ember_matmul_benchmarks();
  register_ember_conv_benchmarks();
  bench::register_blas_benchmarks();
  benchmark::AddCustomContext("ember_threads", std::to_string(ember::num_threads()));
  benchmark::AddCustomContext("ember_matmul", EMBER_BENCH_MATMUL);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
