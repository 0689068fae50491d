// Fusion<Cpu>: a fused program's steps run on cache-sized blocks of its elements (the block's
// intermediates never leave the cache), blocks spread over the worker threads. Programs that
// are small, or that read broadcast inputs, run step by step over whole tensors instead.
#include <algorithm>
#include <cstring>
#include <vector>

#include "ember/backends/cpu/cpu.h"
#include "ember/backends/cpu/strided.h"
#include "ember/core/thread_pool.h"
#include "ember/fusion/fusion.h"

namespace ember {

namespace {

// Elements a block holds: a multiple of every vector width, 64 KiB per f32 value (L2), and
// under the pool's grain, so the ops inside a block run on the calling thread.
constexpr int64_t kBlock = 16384;
// Below this many elements the whole-tensor path is as fast (and makes fewer ops).
constexpr int64_t kMinBlocked = int64_t(1) << 17;

// A dense view of elements [start, start + len) of a dense tensor, as a rank-1 tensor.
CpuTensor block_of(const CpuTensor& t, int64_t start, int64_t len) {
  CpuTensor b;
  b.storage = t.storage;
  b.meta = {Shape{len}, t.meta.dtype};
  b.strides = Dims{1};
  b.offset = t.offset + start;
  return b;
}

}  // namespace

bool Cpu::can_fuse(const Op& op, std::span<const TensorMeta* const>, const TensorMeta&) {
  // Reductions run on their own: the CPU's reduce kernels read dense blocks faster than a
  // program's steps can make them.
  return info(op.code).family != OpFamily::Reduce;
}

std::vector<CpuTensor> Cpu::run_fused(const fusion::Program& p, std::span<CpuTensor> in,
                                      Device dev) {
  int64_t n = p.shape.numel();
  bool blocked = n >= kMinBlocked && !p.reduction;
  for (const CpuTensor& t : in)
    blocked =
        blocked && (t.meta.shape.numel() == 1 || (t.meta.shape == p.shape && t.is_contiguous()));
  // Blocks are rank 1; whole tensors keep the program's rank.
  std::vector<Op> ops = fusion::detail::step_ops(p, blocked ? 1 : p.shape.rank());
  std::vector<CpuTensor> constants(p.steps.size());
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (p.steps[i].code == OpCode::Full)
      constants[i] = Cpu::run(ops[i], {}, {Shape(ops[i].attrs.shape), p.steps[i].dtype}, dev);
  std::vector<CpuTensor> outs;
  if (!blocked) {
    std::vector<CpuTensor> v = fusion::detail::run_steps<Cpu>(p, ops, in, true, constants, dev);
    for (int32_t o : p.outputs) outs.push_back(v[o]);
    if (p.reduction) outs.push_back(fusion::detail::run_reduction<Cpu>(p, v, dev));
    return outs;
  }
  for (int32_t o : p.outputs) outs.push_back(cpu::empty({p.shape, p.steps[o].dtype}));
  std::vector<CpuTensor> one(in.size());
  for (size_t j = 0; j < in.size(); ++j)
    if (in[j].meta.shape.numel() == 1) one[j] = block_of(in[j], 0, 1);
  int64_t blocks = (n + kBlock - 1) / kBlock;
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<CpuTensor> x(in.size());
    for (int64_t b = b0; b < b1; ++b) {
      int64_t start = b * kBlock, len = std::min(kBlock, n - start);
      for (size_t j = 0; j < in.size(); ++j)
        x[j] = in[j].meta.shape.numel() == 1 ? one[j] : block_of(in[j], start, len);
      std::vector<CpuTensor> v =
          fusion::detail::run_steps<Cpu>(p, ops, std::span<CpuTensor>(x), false, constants, dev);
      for (size_t o = 0; o < p.outputs.size(); ++o) {
        // Values are dense (fresh, or a block view when a step passes its input through).
        const CpuTensor& r = v[p.outputs[o]];
        size_t bytes = size_t(size_of(r.meta.dtype));
        if (r.meta.shape.numel() == len)
          std::memcpy(outs[o].raw() + start * bytes, r.raw(), size_t(len) * bytes);
        else  // a constant output: one element repeated
          for (int64_t e = 0; e < len; ++e)
            std::memcpy(outs[o].raw() + (start + e) * bytes, r.raw(), bytes);
      }
    }
  });
  return outs;
}

}  // namespace ember
