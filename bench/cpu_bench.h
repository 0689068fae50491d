// Shared by cpu_bench.cpp (ember) and cpu_peers.cpp (native peers): the problem sizes and
// the per-iteration work counters. bench/peer_torch_cpu.py uses the same sizes and names.
//
// Benchmark names are "<who>/<op>/<size>": who is ember's backend ("cpu", "dispatch") or a
// peer ("openblas", "onednn", "copy"); bench/merge_bench.py pairs rows by "<op>/<size>".
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

namespace bench {

inline constexpr int64_t kTiny = 16;            // per-op overhead
inline constexpr int64_t kElems = 16 << 20;     // add, exp: 16M floats
inline constexpr int64_t kSumElems = 64 << 20;  // full sum: 64M floats
inline constexpr int64_t kSoftmaxRows = 4096, kSoftmaxCols = 1024;
inline constexpr int64_t kSquare = 4096;  // sum_dim and transpose copy: [4096, 4096]
/// A matmul benchmark: c [m, n] = a [m, k] b [k, n], with a stored transposed ([k, m], read
/// through a transposed view) when `ta`, b likewise when `tb`. Named "matmul/<name>" on every
/// side. The squares, and the three GEMMs of a training step of the main job's MLP layer
/// 784 -> 256 at batch 64: forward x w, the weight's gradient x^T g, the input's g w^T. Run in
/// f32 ("matmul/<name>") and in bf16 ("matmul_bf16/<name>": inputs and output bf16, sums in
/// f32; AMX tiles where the CPU has them, on every side).
struct MatmulSize {
  const char* name;
  int64_t m, k, n;
  bool ta, tb;
  double flop() const { return 2.0 * double(m) * double(n) * double(k); }
};
inline constexpr MatmulSize kMatmulSizes[] = {
    {"256", 256, 256, 256, false, false},
    {"512", 512, 512, 512, false, false},
    {"1024", 1024, 1024, 1024, false, false},
    {"2048", 2048, 2048, 2048, false, false},
    {"train_fwd_64x784x256", 64, 784, 256, false, false},
    {"train_wgrad_784x64x256_ta", 784, 64, 256, true, false},
    {"train_dgrad_64x256x784_tb", 64, 256, 784, false, true},
};

/// A conv2d benchmark: x [n, c_in, hw, hw] with w [c_out, c_in, k, k], stride 1, padding
/// (k - 1) / 2 (the size is kept). Named "conv2d/<name>" on both sides.
struct Conv2dSize {
  const char* name;
  int64_t n, c_in, c_out, hw, k;
  double flop() const { return 2.0 * double(n * c_out * hw * hw) * double(c_in * k * k); }
};
inline constexpr Conv2dSize kConv2dSizes[] = {
    {"resnet_3x3_8x64x56x56", 8, 64, 64, 56, 3},         // a ResNet stage-1 3x3 conv
    {"cifar_3x3_32x3x32x32", 32, 3, 32, 32, 3},          // a first layer on CIFAR-sized images
    {"resnet_1x1_8x64x56x56_to256", 8, 64, 256, 56, 1},  // a bottleneck's 1x1 expansion
    {"resnet_1x1_1x64x56x56_to256", 1, 64, 256, 56, 1},  // the same for one image (inference)
    {"cifar_3x3_32x32x32x32", 32, 32, 32, 32, 3},        // a CIFAR network's middle layer
    {"small_3x3_64x16x28x28", 64, 16, 16, 28, 3},        // 16 channels on MNIST-sized images
};
/// scaled_dot_product_attention forward of q = k = v [heads, len, d], f32, scale 1/sqrt(d),
/// optionally causal. Named "attention/<name>" on both sides; the peer is matmul, softmax,
/// matmul (with a masked_fill when causal).
struct AttentionSize {
  const char* name;
  int64_t heads, len, d;
  bool causal;
};
inline constexpr AttentionSize kAttentionSizes[] = {
    {"8x512x64", 8, 512, 64, false},
    {"8x1024x64_causal", 8, 1024, 64, true},
};
/// max_pool2d: the ResNet stem's 3x3, stride 2, padding 1 pool of [8, 64, 112, 112].
inline constexpr int64_t kPoolN = 8, kPoolC = 64, kPoolHW = 112;
/// Depthwise conv2ds: x [n, c, hw, hw] with w [c, 1, k, k], groups c, padding k / 2: a MobileNet
/// block's 3x3 at stride 1, and EfficientNet downsampling blocks' 5x5 at stride 2. Memory-
/// bound, their bytes the input and the output. Named "depthwise_conv2d/<name>" on every side
/// ("copy": a memcpy of the same bytes).
struct DepthwiseSize {
  const char* name;
  int64_t n, c, hw, k, stride;
  int64_t out_hw() const { return (hw + 2 * (k / 2) - k) / stride + 1; }
  int64_t bytes() const { return int64_t(sizeof(float)) * n * c * (hw * hw + out_hw() * out_hw()); }
};
inline constexpr DepthwiseSize kDepthwiseSizes[] = {
    {"8x64x56x56_k3", 8, 64, 56, 3, 1},
    {"8x96x56x56_k5s2", 8, 96, 56, 5, 2},
    {"8x672x14x14_k5s2", 8, 672, 14, 5, 2},  // a late EfficientNet stage: small planes
};

// Work per iteration, read by merge_bench.py to turn the median time into a rate. Exactly one
// is set per benchmark: "flop" (GFLOP/s), "bytes" moved = read + written (GB/s), or "ops"
// (microseconds per op).
inline void set_flop(benchmark::State& st, double flop) { st.counters["flop"] = flop; }
inline void set_bytes(benchmark::State& st, double bytes) { st.counters["bytes"] = bytes; }
inline void set_ops(benchmark::State& st, double ops) { st.counters["ops"] = ops; }

// The native peers (cpu_peers.cpp). Registration order is run order; main() keeps everything
// that calls OpenBLAS last, so OpenBLAS's still-spinning worker threads never overlap a
// bandwidth benchmark.
void register_copy_benchmarks();
void register_blas_benchmarks();

/// One iteration of a benchmarked op, its inputs made once and held by the closure.
using Op = std::function<void()>;
/// oneDNN's sgemm and convolution (`blocked`: in its own layouts) as ops; an empty op, with
/// `error` saying why, where oneDNN is not built in or declines the problem.
Op onednn_matmul_op(const MatmulSize& s, std::string* error);
Op onednn_conv2d_op(const Conv2dSize& c, bool blocked, std::string* error);
/// oneDNN's u8 x s8 -> s32 matmul as an op (the peer of int_matmul's "matmul_u8s8/<name>").
Op onednn_matmul_u8s8_op(const MatmulSize& s, std::string* error);
/// oneDNN's u8 x s8 -> s32 convolution as an op (the peer of int_conv's "conv2d_u8s8/<name>"),
/// in NCHW (its reference loop: slow) or (`blocked`) the layouts oneDNN picks.
Op onednn_conv2d_u8s8_op(const Conv2dSize& c, bool blocked, std::string* error);

/// A paired comparison (cpu_paired.cpp): ember's op and its peers', run in turn in one process.
/// A side that times its own batches (a peer in another process): the median ms of one batch of
/// about `batch_ms` after `gap_ms` idle, timed as run_paired times an Op's.
using BatchOp = std::function<double(double batch_ms, double gap_ms)>;
struct PairedPeer {
  std::string who;  // "onednn", "onednn_blocked", "torch"
  Op op;            // run here; or
  BatchOp batch;    // timed by the peer
};
struct Paired {
  std::string name;  // "<op>/<size>", as the benchmark rows
  double flop;       // per iteration
  Op ember;
  std::vector<PairedPeer> peers;
};
/// Runs each of `pairs` for `rounds` rounds: in a round every side runs, in an order that
/// rotates, a batch of iterations (about `batch_ms`, at least 3, after one untimed) with the
/// process idle for `gap_ms` before each batch, so that no library's idle threads still spin
/// beside the next. A side's figure is its batch medians' median; the speedup, peer / ember,
/// the median of the rounds' ratios, with the lowest and highest. Prints a table and writes
/// JSON records to `out` (if not empty). Returns 0, or 1 when an op throws.
int run_paired(const std::vector<Paired>& pairs, int rounds, double batch_ms, double gap_ms,
               const std::string& out);

}  // namespace bench
