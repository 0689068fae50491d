#include "ember/kernel/kernels/fused.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "ember/core/error.h"
#include "ember/kernel/builder.h"
#include "ember/kernel/kernels/detail.h"
#include "ember/kernel/kernels/elementwise.h"

namespace ember::kernel {

using fusion::Program;
using fusion::Ref;
using fusion::Step;

std::string FusedLayout::key() const {
  std::string k = dense ? "d" + std::to_string(width) + "s" + std::to_string(scalar_inputs)
                        : "r" + std::to_string(rank);
  if (kept || reduced)
    k += "k" + std::to_string(kept) + "x" + std::to_string(reduced) + (per_workgroup ? "w" : "t");
  return k + (wide_index ? "w" : "") + "g" + std::to_string(workgroup);
}

ScalarType fused_constant_type(DType t) {
  if (t == DType::F64) return ScalarType::F64;
  if (is_float(t)) return ScalarType::F32;
  if (t == DType::Bool) return ScalarType::I32;
  return ScalarType::I64;
}

bool fused_step_supported(OpCode op, DType operand, DType out) {
  switch (info(op).family) {
    case OpFamily::Cast:
    case OpFamily::Where:
      return true;
    case OpFamily::Create:
      return op == OpCode::Full;
    default:
      (void)out;
      return elementwise_supported(op, operand);
  }
}

namespace {

// The values of every step, for one element (lane) whose inputs are `in`.
std::vector<Val> compute(KernelBuilder& kb, const Program& p, const std::vector<Val>& in,
                         const std::vector<Val>& constants) {
  std::vector<Val> v(p.steps.size());
  auto arg = [&](const Step& s, int a) {
    Ref r = s.args[a];
    return Program::is_input(r) ? in[Program::input_index(r)] : v[r];
  };
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    ScalarType t = scalar_of(s.dtype);
    switch (s.code) {
      case OpCode::Full:
        v[i] = constants[s.constant];
        break;
      case OpCode::Cast:
        v[i] = detail::convert(kb, arg(s, 0), t);
        break;
      case OpCode::Where:
        v[i] = kb.select(arg(s, 0), arg(s, 1), arg(s, 2));
        break;
      default: {
        std::vector<Val> ops;
        for (int a = 0; a < s.arity; ++a) ops.push_back(arg(s, a));
        v[i] = apply_elementwise(kb, s.code, ops);
      }
    }
  }
  return v;
}

std::string kernel_name(const Program& p, const FusedLayout& L) {
  // FNV-1a of the signature: a readable, stable name (the cache keys on the whole source).
  uint64_t h = 1469598103934665603ull;
  for (char c : p.signature()) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  char buf[40];
  std::snprintf(buf, sizeof buf, "fused_%016llx_", static_cast<unsigned long long>(h));
  return buf + L.key();
}

// The constants, passed once and converted to their step's dtype once.
std::vector<Val> constant_params(KernelBuilder& kb, const Program& p) {
  std::vector<Val> constants;
  for (size_t c = 0; c < p.constants.size(); ++c) {
    DType t = DType::F32;
    for (const Step& s : p.steps)
      if (s.code == OpCode::Full && s.constant == int32_t(c)) t = s.dtype;
    Val raw = kb.scalar("c" + std::to_string(c), fused_constant_type(t));
    constants.push_back(detail::convert(kb, raw, scalar_of(t)));
  }
  return constants;
}

// A program ending in a reduction (fused.h).
Kernel fused_reduce_kernel(const Program& p, const FusedLayout& L) {
  const fusion::Reduction& red = *p.reduction;
  OpCode rop = red.op.code;
  if (rop != OpCode::Sum && rop != OpCode::Max && rop != OpCode::Min)
    throw ValueError("[fusion] no fused kernel ends in " + std::string(name(rop)));
  if (!is_float(red.out.dtype))
    throw ValueError("[fusion] fused reductions are of float values, not " +
                     std::string(name(red.out.dtype)));
  if (L.kept < 0 || L.reduced < 0 || L.kept + L.reduced > 8)
    throw ValueError("[fusion] a fused reduction over more than 8 dims");
  if (L.per_workgroup && (L.workgroup % 32 || L.workgroup > 1024))
    throw ValueError("[fusion] workgroup must be a multiple of 32 up to 1024");
  ScalarType ix = detail::index_type(L.wide_index);
  ScalarType t = scalar_of(red.out.dtype);
  ScalarType acc_t = detail::compute_type(t);
  KernelBuilder kb(kernel_name(p, L), {L.workgroup, 1, 1});
  std::vector<Mem> in, out;
  for (size_t j = 0; j < p.inputs.size(); ++j)
    in.push_back(kb.buffer("in" + std::to_string(j), scalar_of(p.inputs[j].dtype), Access::Read));
  for (size_t o = 0; o < p.outputs.size(); ++o)
    out.push_back(kb.buffer("out" + std::to_string(o), scalar_of(p.steps[p.outputs[o]].dtype),
                            Access::Write));
  Mem result = kb.buffer("red", t, Access::Write);
  Val outputs = kb.scalar("outputs", ix), size = kb.scalar("size", ix);
  std::vector<Val> kept = detail::scalars(kb, "kept", L.kept, ix);
  std::vector<Val> reduced = detail::scalars(kb, "reduced", L.reduced, ix);
  // Strides over the kept and the reduced dims: the inputs', then the outputs' (one set).
  std::vector<std::vector<Val>> ks, rs;
  for (size_t j = 0; j < p.inputs.size(); ++j) {
    ks.push_back(detail::scalars(kb, "in" + std::to_string(j) + "_k", L.kept, ix));
    rs.push_back(detail::scalars(kb, "in" + std::to_string(j) + "_r", L.reduced, ix));
  }
  if (!p.outputs.empty()) {
    ks.push_back(detail::scalars(kb, "o_k", L.kept, ix));
    rs.push_back(detail::scalars(kb, "o_r", L.reduced, ix));
  }
  std::vector<Val> constants = constant_params(kb, p);

  auto combine = [&](const Val& a, const Val& b) {
    return rop == OpCode::Sum ? a + b : rop == OpCode::Max ? kb.max(a, b) : kb.min(a, b);
  };
  auto ident = [&] {
    return kb.lit(acc_t, rop == OpCode::Sum ? 0.0 : rop == OpCode::Max ? -INFINITY : INFINITY);
  };
  // Each operand's offset of result g's first element.
  auto bases = [&](const Val& g) {
    std::vector<Val> b;
    std::vector<Val> c = L.kept ? detail::coords(g, kept) : std::vector<Val>{};
    for (size_t j = 0; j < ks.size(); ++j)
      b.push_back(L.kept ? detail::offset(c, ks[j]) : kb.lit(ix, 0));
    return b;
  };
  // Element r of result g: the steps run, outputs stored, the reduced value returned.
  auto element = [&](const std::vector<Val>& base, const Val& r) {
    std::vector<Val> c = L.reduced ? detail::coords(r, reduced) : std::vector<Val>{};
    auto at = [&](size_t j) { return L.reduced ? base[j] + detail::offset(c, rs[j]) : base[j]; };
    std::vector<Val> x;
    for (size_t j = 0; j < p.inputs.size(); ++j) x.push_back(kb.load(in[j], at(j)));
    std::vector<Val> v = compute(kb, p, x, constants);
    if (!p.outputs.empty()) {
      Val o = at(p.inputs.size());
      for (size_t k = 0; k < p.outputs.size(); ++k) kb.store(out[k], o, v[p.outputs[k]]);
    }
    return kb.cast(v[size_t(red.value)], acc_t);
  };
  Var acc = kb.var("acc", acc_t);

  if (!L.per_workgroup) {
    detail::grid_loop(kb, outputs, [&](Val g) {
      std::vector<Val> base = bases(g);
      acc.set(ident());
      kb.for_(kb.lit(ix, 0), size, kb.lit(ix, 1),
              [&](Val r) { acc.set(combine(acc.get(), element(base, r))); });
      kb.store(result, g, kb.cast(acc.get(), t));
    });
    return kb.finish();
  }
  auto subgroup = [&](const Val& v) {
    return rop == OpCode::Sum   ? kb.subgroup_add(v)
           : rop == OpCode::Max ? kb.subgroup_max(v)
                                : kb.subgroup_min(v);
  };
  // One partial result per subgroup (subgroups have at least 8 lanes on every target).
  Mem partial = kb.shared("partial", acc_t, L.workgroup / 8);
  Val tid = kb.local_id(0), lane = kb.subgroup_lane(), sg = kb.subgroup_size();
  Val warp = tid / sg, warps = kb.local_size(0) / sg;
  kb.for_(kb.cast(kb.group_id(0), ix), outputs, kb.cast(kb.num_groups(0), ix), [&](Val g) {
    std::vector<Val> base = bases(g);
    acc.set(ident());
    kb.for_(kb.cast(tid, ix), size, kb.cast(kb.local_size(0), ix),
            [&](Val r) { acc.set(combine(acc.get(), element(base, r))); });
    Val mine = subgroup(acc.get());
    kb.if_(lane == 0, [&] { kb.store(partial, warp, mine); });
    kb.barrier();
    kb.if_(warp == 0, [&] {
      acc.set(ident());
      kb.for_(lane, warps, sg, [&](Val k) { acc.set(combine(acc.get(), kb.load(partial, k))); });
      Val total = subgroup(acc.get());
      kb.if_(lane == 0, [&] { kb.store(result, g, kb.cast(total, t)); });
    });
    kb.barrier();  // `partial` is reused by the next result
  });
  return kb.finish();
}

}  // namespace

Kernel fused_kernel(const Program& p, const FusedLayout& L) {
  if (p.outputs.empty() && !p.reduction) throw ValueError("[fusion] a program without outputs");
  if (!L.dense && (L.rank < 1 || L.rank > 8))
    throw ValueError("[fusion] rank must be 1 to 8, got " + std::to_string(L.rank));
  for (const Step& s : p.steps)
    if (s.code != OpCode::Full &&
        !fused_step_supported(s.code, operand_dtype(p, s.args[0]), s.dtype))
      throw ValueError("[" + std::string(name(s.code)) + "] has no fused kernel expression for " +
                       std::string(name(operand_dtype(p, s.args[0]))));
  if (p.reduction) return fused_reduce_kernel(p, L);
  ScalarType ix = detail::index_type(L.wide_index);
  int w = L.dense ? L.width : 1;
  KernelBuilder kb(kernel_name(p, L), {L.workgroup, 1, 1});

  auto one_element = [&](size_t j) { return L.dense && (L.scalar_inputs >> j & 1); };
  std::vector<Mem> in, out;
  for (size_t j = 0; j < p.inputs.size(); ++j)
    in.push_back(kb.buffer("in" + std::to_string(j), scalar_of(p.inputs[j].dtype), Access::Read,
                           one_element(j) ? 1 : w));
  for (size_t o = 0; o < p.outputs.size(); ++o)
    out.push_back(kb.buffer("out" + std::to_string(o), scalar_of(p.steps[p.outputs[o]].dtype),
                            Access::Write, w));
  Val n = kb.scalar("n", ix);
  std::vector<Val> shape;
  std::vector<std::vector<Val>> strides;
  if (!L.dense) {
    shape = detail::scalars(kb, "shape", L.rank, ix);
    for (size_t j = 0; j < p.inputs.size(); ++j)
      strides.push_back(detail::scalars(kb, "in" + std::to_string(j) + "_stride", L.rank, ix));
  }
  std::vector<Val> constants = constant_params(kb, p);
  auto store_outputs = [&](const std::vector<Val>& vals, const Val& at) {
    for (size_t o = 0; o < p.outputs.size(); ++o) kb.store(out[o], at, vals[p.outputs[o]]);
  };

  if (!L.dense) {
    detail::grid_loop(kb, n, [&](Val i) {
      std::vector<Val> coord = detail::coords(i, shape);
      std::vector<Val> x;
      for (size_t j = 0; j < p.inputs.size(); ++j)
        x.push_back(kb.load(in[j], detail::offset(coord, strides[j])));
      store_outputs(compute(kb, p, x, constants), i);
    });
    return kb.finish();
  }

  std::vector<Val> single(p.inputs.size());
  for (size_t j = 0; j < p.inputs.size(); ++j)
    if (one_element(j)) single[j] = kb.load(in[j], kb.lit(ix, 0));
  auto scalar_at = [&](const Val& e) {
    std::vector<Val> x;
    for (size_t j = 0; j < p.inputs.size(); ++j)
      x.push_back(one_element(j) ? single[j] : kb.load(in[j], e));
    store_outputs(compute(kb, p, x, constants), e);
  };
  if (w == 1) {
    detail::grid_loop(kb, n, scalar_at);
    return kb.finish();
  }
  Val chunks = (n + (w - 1)) / w;
  detail::grid_loop(kb, chunks, [&](Val chunk) {
    Val base = chunk * w;
    kb.if_else(
        base + w <= n,
        [&] {
          // 16-byte loads; the steps run lane by lane; 16-byte stores.
          std::vector<Val> vecs(p.inputs.size());
          for (size_t j = 0; j < p.inputs.size(); ++j)
            if (!one_element(j)) vecs[j] = kb.load(in[j], base, w);
          std::vector<std::vector<Val>> lanes(p.outputs.size());
          for (int l = 0; l < w; ++l) {
            std::vector<Val> x;
            for (size_t j = 0; j < p.inputs.size(); ++j)
              x.push_back(one_element(j) ? single[j] : kb.extract(vecs[j], l));
            std::vector<Val> vals = compute(kb, p, x, constants);
            for (size_t o = 0; o < p.outputs.size(); ++o) lanes[o].push_back(vals[p.outputs[o]]);
          }
          for (size_t o = 0; o < p.outputs.size(); ++o) kb.store(out[o], base, kb.vec(lanes[o]));
        },
        [&] { kb.for_(base, n, kb.lit(ix, 1), scalar_at); });
  });
  return kb.finish();
}

}  // namespace ember::kernel
