#include "ember/kernel/kernels/softmax.h"

#include <cmath>
#include <vector>

#include "ember/kernel/builder.h"
#include "ember/kernel/kernels/detail.h"

namespace ember::kernel {

int softmax_vector_width(DType dtype) { return 16 / int(size_of(dtype)); }

Kernel softmax_kernel(const SoftmaxSpec& s) {
  std::string_view op_name = name(s.op);
  if (s.op != OpCode::Softmax && s.op != OpCode::LogSoftmax && s.op != OpCode::LogSumExp)
    detail::unsupported(op_name, "no softmax kernel (softmax, log_softmax and logsumexp have one)");
  if (!is_float(s.dtype))
    detail::unsupported(op_name, "no softmax kernel for " + std::string(name(s.dtype)));
  bool group = s.layout == SoftmaxSpec::GroupPerRow;
  if (group && (s.workgroup < 32 || s.workgroup % 32 || s.workgroup > 1024))
    detail::unsupported(op_name, "workgroup must be a multiple of 32 up to 1024");
  if (s.items < 0 || s.items > 16) detail::unsupported(op_name, "items must be 0 to 16");
  int items = group ? s.items : 0;
  bool vec = group && items > 0 && s.vector;
  int w = vec ? softmax_vector_width(s.dtype) : 1;
  bool lse = s.op == OpCode::LogSumExp, log = s.op == OpCode::LogSoftmax;
  ScalarType t = scalar_of(s.dtype), ct = detail::compute_type(t);
  ScalarType ix = detail::index_type(s.wide_index);
  std::string extra = group ? "_group" + (items ? "_x" + std::to_string(items) : "") : "_thread";
  if (vec) extra += "_v" + std::to_string(w);
  int wg = group ? s.workgroup : 256;
  KernelBuilder kb(detail::kname(op_name, s.dtype, s.wide_index, extra), {wg, 1, 1});
  Mem x = kb.buffer("x", t, Access::Read, w);
  Mem out = kb.buffer("out", t, Access::Write, w);
  Val outer = kb.scalar("outer", ix), size = kb.scalar("size", ix), inner = kb.scalar("inner", ix);
  Val so = kb.scalar("outer_stride", ix), sr = kb.scalar("size_stride", ix);
  Val si = kb.scalar("inner_stride", ix);
  Val rows = outer * inner;
  Var acc = kb.var("acc", ct);
  std::vector<Var> v;
  for (int k = 0; k < items; ++k)
    v.push_back(kb.var("v" + std::to_string(k), vec ? Type::vec(t, w) : Type(ct)));

  // The row's max m, sum of exp(x - shift) and the outputs, given how to walk the row:
  // each(f) calls f(r, value) for this thread's elements; total(acc, max) combines the
  // threads' partial results (identity for ThreadPerRow).
  auto row = [&](const Val& xb, const Val& ob, const Val& g,
                 const std::function<void(const std::function<void(Val, Val)>&)>& each,
                 const std::function<Val(const Val&, bool)>& total, const Val& writer,
                 const std::function<void(const std::function<Val(Val)>&)>& outputs = {}) {
    acc.set(kb.lit(ct, -INFINITY));
    each([&](Val, Val e) { acc.set(kb.max(acc.get(), e)); });
    Val m = total(acc.get(), true);
    // logsumexp takes an infinite max as 0: a row of -inf gives -inf, one with +inf, +inf.
    Val shift = lse ? kb.select(kb.is_inf(m), kb.lit(ct, 0), m) : m;
    acc.set(kb.lit(ct, 0));
    each([&](Val, Val e) { acc.set(acc.get() + kb.exp(e - shift)); });
    Val sum = total(acc.get(), false);
    if (lse) {
      kb.if_(writer, [&] { kb.store(out, g, kb.cast(kb.log(sum) + shift, t)); });
      return;
    }
    Val log_sum = log ? kb.log(sum) : Val();
    auto y = [&](Val e) { return log ? e - shift - log_sum : kb.exp(e - shift) / sum; };
    if (outputs) return outputs(y);
    each([&](Val r, Val e) { kb.store(out, ob + r * inner, kb.cast(y(e), t)); });
  };

  if (!group) {
    detail::grid_loop(kb, rows, [&](Val g) {
      Val o = g / inner, j = g % inner;
      Val xb = o * so + j * si, ob = o * size * inner + j;
      auto each = [&](const std::function<void(Val, Val)>& f) {
        kb.for_(kb.lit(ix, 0), size, kb.lit(ix, 1),
                [&](Val r) { f(r, kb.cast(kb.load(x, xb + r * sr), ct)); });
      };
      row(
          xb, ob, g, each, [](const Val& a, bool) { return a; }, kb.lit(ScalarType::Bool, 1));
    });
    return kb.finish();
  }

  // One partial result per subgroup; subgroups have at least 8 lanes on every target.
  Mem partial = kb.shared("partial", ct, wg / 8);
  Var red = kb.var("red", ct);
  Val tid = kb.local_id(0), lane = kb.subgroup_lane(), sg = kb.subgroup_size();
  Val warp = tid / sg, warps = kb.local_size(0) / sg;
  Val tid_ix = kb.cast(tid, ix);
  auto total = [&](const Val& a, bool max) {
    Val w = max ? kb.subgroup_max(a) : kb.subgroup_add(a);
    kb.if_(lane == 0, [&] { kb.store(partial, warp, w); });
    kb.barrier();
    red.set(kb.lit(ct, max ? -INFINITY : 0));
    kb.for_(0, warps, 1, [&](Val k) {
      Val p = kb.load(partial, k);
      red.set(max ? kb.max(red.get(), p) : red.get() + p);
    });
    Val r = red.get();
    kb.barrier();  // `partial` is reused by the next reduction
    return r;
  };
  kb.for_(kb.cast(kb.group_id(0), ix), rows, kb.cast(kb.num_groups(0), ix), [&](Val g) {
    Val o = g / inner, j = g % inner;
    Val xb = o * so + j * si, ob = o * size * inner + j;
    int pass = 0;  // with items: the first pass loads, the later ones read the registers
    if (vec) {     // vector k of this thread: elements (tid + k * wg) * w .. + w - 1
      auto each = [&](const std::function<void(Val, Val)>& f) {
        for (int k = 0; k < items && pass == 0; ++k) {  // every load before any use
          Val r = (tid_ix + double(k * wg)) * double(w);
          kb.if_(r < size, [&] { v[k].set(kb.load(x, xb + r, w)); });
        }
        for (int k = 0; k < items; ++k) {
          Val r = (tid_ix + double(k * wg)) * double(w);
          kb.if_(r < size, [&] {
            Val vk = v[k].get();
            for (int j = 0; j < w; ++j) f(r + double(j), kb.cast(kb.extract(vk, j), ct));
          });
        }
        ++pass;
      };
      auto outputs = [&](const std::function<Val(Val)>& y) {
        for (int k = 0; k < items; ++k) {
          Val r = (tid_ix + double(k * wg)) * double(w);
          kb.if_(r < size, [&] {
            Val vk = v[k].get();
            std::vector<Val> lanes;
            for (int j = 0; j < w; ++j)
              lanes.push_back(kb.cast(y(kb.cast(kb.extract(vk, j), ct)), t));
            kb.store(out, ob + r, kb.vec(lanes));
          });
        }
      };
      row(xb, ob, g, each, total, tid == 0.0, outputs);
      return;
    }
    auto each = [&](const std::function<void(Val, Val)>& f) {
      if (!items) {
        kb.for_(tid_ix, size, kb.cast(kb.local_size(0), ix),
                [&](Val r) { f(r, kb.cast(kb.load(x, xb + r * sr), ct)); });
        return;
      }
      for (int k = 0; k < items; ++k) {
        Val r = tid_ix + double(k * wg);
        kb.if_(r < size, [&] {
          if (pass == 0) v[k].set(kb.cast(kb.load(x, xb + r * sr), ct));
          f(r, v[k].get());
        });
      }
      ++pass;
    };
    row(xb, ob, g, each, total, tid == 0.0);
  });
  return kb.finish();
}

}  // namespace ember::kernel
