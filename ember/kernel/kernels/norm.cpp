#include "ember/kernel/kernels/norm.h"

#include <vector>

#include "ember/kernel/builder.h"
#include "ember/kernel/kernels/detail.h"

namespace ember::kernel {

int norm_vector_width(DType dtype) { return 16 / int(size_of(dtype)); }

Kernel norm_kernel(const NormSpec& s) {
  std::string_view op_name = name(s.op);
  if (s.op != OpCode::LayerNorm && s.op != OpCode::RmsNorm)
    detail::unsupported(op_name, "no norm kernel (layer_norm and rms_norm have one)");
  if (!is_float(s.dtype))
    detail::unsupported(op_name, "no norm kernel for " + std::string(name(s.dtype)));
  bool group = s.layout == NormSpec::GroupPerRow;
  if (group && (s.workgroup < 32 || s.workgroup % 32 || s.workgroup > 1024))
    detail::unsupported(op_name, "workgroup must be a multiple of 32 up to 1024");
  if (s.items < 0 || s.items > 16) detail::unsupported(op_name, "items must be 0 to 16");
  const int items = group ? s.items : 0;
  const bool vec = group && items > 0 && s.vector;
  const int w = vec ? norm_vector_width(s.dtype) : 1;
  const bool layer = s.op == OpCode::LayerNorm;
  const ScalarType t = scalar_of(s.dtype), ct = detail::compute_type(t);
  const ScalarType ix = detail::index_type(s.wide_index);
  std::string extra = group ? "_group" + (items ? "_x" + std::to_string(items) : "") : "_thread";
  if (vec) extra += "_v" + std::to_string(w);
  const int wg = group ? s.workgroup : 256;
  KernelBuilder kb(detail::kname(op_name, s.dtype, s.wide_index, extra), {wg, 1, 1});
  Mem x = kb.buffer("x", t, Access::Read, w);
  Mem gamma = kb.buffer("gamma", t, Access::Read, w);
  Mem beta = layer ? kb.buffer("beta", t, Access::Read, w) : Mem();
  Mem out = kb.buffer("out", t, Access::Write, w);
  Val rows = kb.scalar("rows", ix), size = kb.scalar("size", ix);
  Val row_stride = kb.scalar("row_stride", ix);
  Val eps = kb.scalar("eps", ct);
  Val n = kb.cast(size, ct);
  Var acc = kb.var("acc", ct);
  std::vector<Var> v;
  for (int k = 0; k < items; ++k)
    v.push_back(kb.var("v" + std::to_string(k), vec ? Type::vec(t, w) : Type(ct)));

  // Each(f) calls f(r, x[r]) for this thread's elements r of the row (in the compute type);
  // total(a) sums the threads' partial sums (the identity for ThreadPerRow).
  using Each = std::function<void(const std::function<void(Val, Val)>&)>;
  using Total = std::function<Val(const Val&)>;
  // The row's statistics (mean and rstd; mean is 0 for rms_norm) and its outputs; `outputs`
  // writes y(r, x[r], gamma[r], beta[r]) itself where it is given (the vector path).
  auto row = [&](const Val& ob, const Each& each, const Total& total,
                 const std::function<void(const std::function<Val(Val, Val, Val)>&)>& outputs) {
    acc.set(kb.lit(ct, 0));
    Val mean, rstd;
    if (layer) {
      each([&](Val, Val e) { acc.set(acc.get() + e); });
      mean = total(acc.get()) / n;
      acc.set(kb.lit(ct, 0));
      each([&](Val, Val e) {
        Val d = e - mean;
        acc.set(kb.fma(d, d, acc.get()));
      });
    } else {
      each([&](Val, Val e) { acc.set(kb.fma(e, e, acc.get())); });
    }
    rstd = kb.rsqrt(total(acc.get()) / n + eps);
    auto y = [&](Val e, Val gm, Val bt) {
      Val h = (layer ? e - mean : e) * rstd;
      return layer ? kb.fma(h, gm, bt) : h * gm;
    };
    if (outputs) return outputs(y);
    each([&](Val r, Val e) {
      Val gm = kb.cast(kb.load(gamma, r), ct);
      Val bt = layer ? kb.cast(kb.load(beta, r), ct) : Val();
      kb.store(out, ob + r, kb.cast(y(e, gm, bt), t));
    });
  };

  if (!group) {
    detail::grid_loop(kb, rows, [&](Val g) {
      Val xb = g * row_stride, ob = g * size;
      auto each = [&](const std::function<void(Val, Val)>& f) {
        kb.for_(kb.lit(ix, 0), size, kb.lit(ix, 1),
                [&](Val r) { f(r, kb.cast(kb.load(x, xb + r), ct)); });
      };
      row(ob, each, [](const Val& a) { return a; }, {});
    });
    return kb.finish();
  }

  // One partial sum per subgroup; subgroups have at least 8 lanes on every target.
  Mem partial = kb.shared("partial", ct, wg / 8);
  Var red = kb.var("red", ct);
  Val tid = kb.local_id(0), lane = kb.subgroup_lane(), sg = kb.subgroup_size();
  Val warp = tid / sg, warps = kb.local_size(0) / sg;
  Val tid_ix = kb.cast(tid, ix);
  auto total = [&](const Val& a) {
    Val ws = kb.subgroup_add(a);
    kb.if_(lane == 0, [&] { kb.store(partial, warp, ws); });
    kb.barrier();
    red.set(kb.lit(ct, 0));
    kb.for_(0, warps, 1, [&](Val k) { red.set(red.get() + kb.load(partial, k)); });
    Val r = red.get();
    kb.barrier();  // `partial` is reused by the next sum
    return r;
  };
  kb.for_(kb.cast(kb.group_id(0), ix), rows, kb.cast(kb.num_groups(0), ix), [&](Val g) {
    Val xb = g * row_stride, ob = g * size;
    int pass = 0;  // with items: the first pass loads, the later ones read the registers
    if (vec) {     // vector k of this thread: elements (tid + k * wg) * w .. + w - 1
      auto first = [&](int k) { return (tid_ix + double(k * wg)) * double(w); };
      auto each = [&](const std::function<void(Val, Val)>& f) {
        for (int k = 0; k < items && pass == 0; ++k) {  // every load before any use
          Val r = first(k);
          kb.if_(r < size, [&] { v[k].set(kb.load(x, xb + r, w)); });
        }
        for (int k = 0; k < items; ++k) {
          Val r = first(k);
          kb.if_(r < size, [&] {
            Val vk = v[k].get();
            for (int j = 0; j < w; ++j) f(r + double(j), kb.cast(kb.extract(vk, j), ct));
          });
        }
        ++pass;
      };
      auto outputs = [&](const std::function<Val(Val, Val, Val)>& y) {
        for (int k = 0; k < items; ++k) {
          Val r = first(k);
          kb.if_(r < size, [&] {
            Val vk = v[k].get(), gv = kb.load(gamma, r, w);
            Val bv = layer ? kb.load(beta, r, w) : Val();
            std::vector<Val> lanes;
            for (int j = 0; j < w; ++j) {
              Val e = kb.cast(kb.extract(vk, j), ct), gm = kb.cast(kb.extract(gv, j), ct);
              Val bt = layer ? kb.cast(kb.extract(bv, j), ct) : Val();
              lanes.push_back(kb.cast(y(e, gm, bt), t));
            }
            kb.store(out, ob + r, kb.vec(lanes));
          });
        }
      };
      row(ob, each, total, outputs);
      return;
    }
    auto each = [&](const std::function<void(Val, Val)>& f) {
      if (!items) {
        kb.for_(tid_ix, size, kb.cast(kb.local_size(0), ix),
                [&](Val r) { f(r, kb.cast(kb.load(x, xb + r), ct)); });
        return;
      }
      for (int k = 0; k < items; ++k) {
        Val r = tid_ix + double(k * wg);
        kb.if_(r < size, [&] {
          if (pass == 0) v[k].set(kb.cast(kb.load(x, xb + r), ct));
          f(r, v[k].get());
        });
      }
      ++pass;
    };
    row(ob, each, total, {});
  });
  return kb.finish();
}

}  // namespace ember::kernel
