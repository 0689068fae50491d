// Fusion<Cpu>: a fused program's steps run on cache-sized blocks of its elements (the block's
// intermediates never leave the cache), blocks spread over the worker threads. Programs that
// are small, or that read broadcast inputs, run step by step over whole tensors instead.
#include <algorithm>
#include <climits>
#include <cstring>
#include <iterator>
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

std::vector<Op> ops_of(const fusion::Program& p, size_t constant_rank) {
  std::vector<Op> ops;
  ops.reserve(p.steps.size());
  for (size_t i = 0; i < p.steps.size(); ++i) ops.push_back(fusion::step_op(p, i, constant_rank));
  return ops;
}

// The last step that reads each step's value (-1: none), outputs never released.
std::vector<int32_t> last_uses(const fusion::Program& p) {
  std::vector<int32_t> last(p.steps.size(), -1);
  for (size_t i = 0; i < p.steps.size(); ++i)
    for (int a = 0; a < p.steps[i].arity; ++a)
      if (!fusion::Program::is_input(p.steps[i].args[a]))
        last[p.steps[i].args[a]] = static_cast<int32_t>(i);
  for (int32_t o : p.outputs) last[o] = INT32_MAX;
  return last;
}

// Runs the steps on `in` (whole tensors or one block of each); returns every step's value. A
// value is handed to the step that reads it last, so the op may write into it.
std::vector<CpuTensor> run_steps(const fusion::Program& p, const std::vector<Op>& ops,
                                 const std::vector<int32_t>& last, std::vector<CpuTensor>& in,
                                 bool own_inputs, const std::vector<CpuTensor>& constants,
                                 Device dev) {
  std::vector<int32_t> last_in(in.size(), -1);
  if (own_inputs)
    for (size_t i = 0; i < p.steps.size(); ++i)
      for (int a = 0; a < p.steps[i].arity; ++a)
        if (fusion::Program::is_input(p.steps[i].args[a]))
          last_in[fusion::Program::input_index(p.steps[i].args[a])] = static_cast<int32_t>(i);
  std::vector<CpuTensor> v(p.steps.size());
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const fusion::Step& s = p.steps[i];
    if (s.code == OpCode::Full) {
      v[i] = constants[i];
      continue;
    }
    CpuTensor args[3];
    for (int a = 0; a < s.arity; ++a) {
      fusion::Ref r = s.args[a];
      bool again = false;  // read twice by this step: keep it for the later slot
      for (int b = a + 1; b < s.arity; ++b) again |= s.args[b] == r;
      bool input = fusion::Program::is_input(r);
      CpuTensor& src = input ? in[fusion::Program::input_index(r)] : v[r];
      bool last_read = (input ? last_in[fusion::Program::input_index(r)] : last[r]) == int32_t(i);
      if (last_read && !again)
        args[a] = std::move(src);
      else
        args[a] = src;
    }
    // Recorded ops were validated; their operands (blocks, or whole tensors and constants)
    // broadcast as when they were recorded.
    TensorMeta out{args[0].meta.shape, s.dtype};
    for (int a = 1; a < s.arity; ++a)
      if (args[a].meta.shape != out.shape)
        out.shape = broadcast_shapes(out.shape, args[a].meta.shape);
    v[i] = fusion::detail::run_named<Cpu>(ops[i], std::span<CpuTensor>(args, s.arity), out, dev);
  }
  return v;
}

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

bool Cpu::can_fuse(const Op&, std::span<const TensorMeta* const>, const TensorMeta&) {
  return true;
}

std::vector<CpuTensor> Cpu::run_fused(const fusion::Program& p, std::span<CpuTensor> in,
                                      Device dev) {
  int64_t n = p.shape.numel();
  bool blocked = n >= kMinBlocked;
  for (const CpuTensor& t : in)
    blocked =
        blocked && (t.meta.shape.numel() == 1 || (t.meta.shape == p.shape && t.is_contiguous()));
  // Blocks are rank 1; whole tensors keep the program's rank.
  std::vector<Op> ops = ops_of(p, blocked ? 1 : p.shape.rank());
  std::vector<CpuTensor> constants(p.steps.size());
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (p.steps[i].code == OpCode::Full)
      constants[i] = Cpu::run(ops[i], {}, {Shape(ops[i].attrs.shape), p.steps[i].dtype}, dev);
  std::vector<int32_t> last = last_uses(p);
  std::vector<CpuTensor> outs;
  if (!blocked) {
    std::vector<CpuTensor> whole(std::make_move_iterator(in.begin()),
                                 std::make_move_iterator(in.end()));
    std::vector<CpuTensor> v = run_steps(p, ops, last, whole, true, constants, dev);
    for (int32_t o : p.outputs) outs.push_back(v[o]);
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
      std::vector<CpuTensor> v = run_steps(p, ops, last, x, false, constants, dev);
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
