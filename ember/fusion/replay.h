// Internal to Fusion<B> (ember/fusion/fusion.h): a program's ops run one by one on a backend,
// for backends without fused kernels (the CPU), for a kernel that failed, and for test backends
// that evaluate a Program from its description.
#pragma once
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "ember/backend/apply.h"
#include "ember/core/export.h"
#include "ember/fusion/program.h"

namespace ember::fusion::detail {

/// The ops of a program's steps, fulls one element of rank `constant_rank` (step_op).
EMBER_API std::vector<Op> step_ops(const Program& p, size_t constant_rank);

/// A program's steps run one by one on B, each value handed to the step that reads it last
/// (inputs too when `own_inputs`), so B may write into it. `ops` are step_ops(p, ...); each
/// full step's value is `constants[i]`. Returns every step's value (outputs are kept).
template <Backend B>
std::vector<typename B::Handle> run_steps(const Program& p, const std::vector<Op>& ops,
                                          std::span<typename B::Handle> in, bool own_inputs,
                                          const std::vector<typename B::Handle>& constants,
                                          Device dev) {
  using H = typename B::Handle;
  size_t n = p.steps.size();
  std::vector<int32_t> last(n, -1), last_in(in.size(), -1);
  for (size_t i = 0; i < n; ++i)
    for (int a = 0; a < p.steps[i].arity; ++a) {
      Ref r = p.steps[i].args[a];
      (Program::is_input(r) ? last_in[Program::input_index(r)] : last[r]) = int32_t(i);
    }
  for (int32_t o : p.outputs) last[o] = -1;  // never handed on
  if (p.reduction) last[p.reduction->value] = -1;
  if (!own_inputs) std::fill(last_in.begin(), last_in.end(), -1);
  std::vector<H> v(n);
  for (size_t i = 0; i < n; ++i) {
    const Step& s = p.steps[i];
    if (s.code == OpCode::Full) {
      v[i] = constants[i];
      continue;
    }
    ember::detail::HandleBuffer<H> args(s.arity);
    for (int a = 0; a < s.arity; ++a) {
      Ref r = s.args[a];
      bool again = false;  // read twice by this step: kept for the later slot
      for (int b = a + 1; b < s.arity; ++b) again |= s.args[b] == r;
      bool input = Program::is_input(r);
      H& src = input ? in[Program::input_index(r)] : v[r];
      bool last_read = (input ? last_in[Program::input_index(r)] : last[r]) == int32_t(i);
      if (last_read && !again)
        args[a] = std::move(src);
      else
        args[a] = src;
    }
    // Validated when recorded: the operands (whole tensors, blocks, one-element constants)
    // broadcast as they did then.
    TensorMeta out{B::meta(args[0]).shape, s.dtype};
    for (int a = 1; a < s.arity; ++a)
      if (B::meta(args[a]).shape != out.shape)
        out.shape = broadcast_shapes(out.shape, B::meta(args[a]).shape);
    v[i] = run_named<B>(ops[i], args.span(), out, dev);
  }
  return v;
}

/// The program's reduction of `values` (every step's value, as run_steps returns them).
template <Backend B>
typename B::Handle run_reduction(const Program& p, std::vector<typename B::Handle>& values,
                                 Device dev) {
  return run_named<B>(p.reduction->op,
                      std::span<typename B::Handle>(&values[size_t(p.reduction->value)], 1),
                      p.reduction->out, dev);
}

}  // namespace ember::fusion::detail
