// Fusion's matmul epilogues on a GPU runtime. A program that reads a deferred matmul's product
// (fusion.h) is split: the chain of steps that starts at the product and adds a bias (a row of n
// values) or a residual (the product's shape), then maybe takes the relu (maximum with a zero
// constant), runs inside the GEMM (cuBLASLt's bias and relu epilogues, its C operand for the
// residual); the program's other steps run as one fused kernel that reads the chain's value as an
// input. Linear layers are the case: `x.matmul(w) + b` is one GEMM, `relu(x.matmul(w) + b)` too
// when nothing keeps the sum, and in training (Autodiff keeps the relu's input) the relu runs
// after it.
#include <algorithm>

#include "ember/backends/gpu/ops.h"
#include "ember/fusion/settings.h"

namespace ember::gpu {

namespace {

using fusion::Program;
using fusion::Ref;

// The steps that read `r`, counting a step once per operand slot.
int readers(const Program& p, Ref r, int* which) {
  int n = 0;
  for (size_t i = 0; i < p.steps.size(); ++i)
    for (int a = 0; a < p.steps[i].arity; ++a)
      if (p.steps[i].args[a] == r) {
        ++n;
        *which = static_cast<int>(i);
      }
  return n;
}

bool is_zero_constant(const Program& p, Ref r) {
  if (Program::is_input(r)) return false;
  const fusion::Step& s = p.steps[size_t(r)];
  if (s.code != OpCode::Full || s.constant < 0) return false;
  const Scalar& v = p.constants[size_t(s.constant)];
  return v.is_int ? v.i == 0 : v.f == 0.0;
}

bool aligned16(const GpuTensor& t) { return t.ptr() % 16 == 0; }

// A bias for a product of `out`'s shape: its last dim's n values, every other dim 1, dense.
bool bias_like(const GpuTensor& t, const TensorMeta& out) {
  const Shape& s = t.meta.shape;
  if (s.rank() == 0 || s.rank() > out.shape.rank()) return false;
  int64_t n = out.shape[out.shape.rank() - 1];
  if (s[s.rank() - 1] != n || s.numel() != n) return false;
  return (n == 1 || t.strides[s.rank() - 1] == 1) && aligned16(t);
}

// The chain the GEMM runs: its steps, and the bias and residual it reads.
struct Chain {
  std::vector<char> absorbed;
  Ref value = 0;  // the chain's last step: the GEMM writes its value
  int bias = -1, residual = -1;
  bool relu = false;
  int steps = 0;
};

Chain find_chain(const Program& p, int product, std::span<GpuTensor> in) {
  const TensorMeta& pm = p.inputs[size_t(product)];
  Chain c;
  c.absorbed.assign(p.steps.size(), 0);
  std::vector<char> out(p.steps.size(), 0);
  for (int32_t o : p.outputs) out[size_t(o)] = 1;
  Ref cur = Program::input(product);
  for (;;) {
    // A value that is written or reduced ends the chain: the GEMM writes it.
    if (!Program::is_input(cur) && (out[size_t(cur)] || (p.reduction && p.reduction->value == cur)))
      break;
    int i = -1;
    if (readers(p, cur, &i) != 1) break;
    const fusion::Step& s = p.steps[size_t(i)];
    if (s.dtype != pm.dtype || s.arity != 2 || c.relu) break;
    Ref x = s.args[0] == cur ? s.args[1] : s.args[0];
    if (s.code == OpCode::Add && Program::is_input(x)) {
      int k = Program::input_index(x);
      const GpuTensor& t = in[size_t(k)];
      if (k == product || t.meta.dtype != pm.dtype) break;
      if (c.bias < 0 && bias_like(t, pm)) {
        c.bias = k;
      } else if (c.residual < 0 && t.meta.shape == pm.shape && t.is_contiguous() && aligned16(t)) {
        c.residual = k;
      } else {
        break;
      }
    } else if (s.code == OpCode::Maximum && is_zero_constant(p, x)) {
      c.relu = true;
    } else {
      break;
    }
    c.absorbed[size_t(i)] = 1;
    c.value = i;
    cur = i;
    ++c.steps;
  }
  return c;
}

// The program without the chain's steps, reading the chain's value as input `product`; `keep`
// maps its outputs to p's (-1: the chain's value). The inputs it reads move to `rest_in`.
Program rest_of(const Program& p, const Chain& c, int product, const GpuTensor& value,
                std::span<GpuTensor> in, std::vector<GpuTensor>& rest_in, std::vector<int>& keep) {
  const size_t n = p.steps.size();
  std::vector<char> needed(n, 0);
  for (int32_t o : p.outputs)
    if (o != c.value) needed[size_t(o)] = 1;
  if (p.reduction) needed[size_t(p.reduction->value)] = 1;
  for (size_t i = n; i-- > 0;) {
    if (!needed[i]) continue;
    for (int a = 0; a < p.steps[i].arity; ++a) {
      Ref r = p.steps[i].args[a];
      if (!Program::is_input(r) && r != c.value) needed[size_t(r)] = 1;
    }
  }
  Program r;
  r.shape = p.shape;
  r.constants = p.constants;
  std::vector<Ref> input_of(p.inputs.size(), 0);
  std::vector<char> has_input(p.inputs.size(), 0);
  auto take_input = [&](int k, const TensorMeta& m, GpuTensor t) {
    if (!has_input[size_t(k)]) {
      has_input[size_t(k)] = 1;
      input_of[size_t(k)] = Program::input(static_cast<int>(r.inputs.size()));
      r.inputs.push_back(m);
      rest_in.push_back(std::move(t));
    }
    return input_of[size_t(k)];
  };
  std::vector<Ref> step_of(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (!needed[i] || c.absorbed[i]) continue;
    fusion::Step s = p.steps[i];
    for (int a = 0; a < s.arity; ++a) {
      Ref x = s.args[a];
      if (x == c.value)
        s.args[a] = take_input(product, {p.shape, p.steps[size_t(c.value)].dtype}, value);
      else if (Program::is_input(x))
        s.args[a] = take_input(Program::input_index(x), p.inputs[size_t(Program::input_index(x))],
                               std::move(in[size_t(Program::input_index(x))]));
      else
        s.args[a] = step_of[size_t(x)];
    }
    r.steps.push_back(s);
    step_of[i] = static_cast<Ref>(r.steps.size() - 1);
  }
  for (int32_t o : p.outputs) {
    if (o == c.value) {
      keep.push_back(-1);
    } else {
      keep.push_back(static_cast<int>(r.outputs.size()));
      r.outputs.push_back(step_of[size_t(o)]);
    }
  }
  if (p.reduction) {
    r.reduction = p.reduction;
    r.reduction->value = step_of[size_t(p.reduction->value)];
  }
  return r;
}

}  // namespace

std::optional<std::vector<GpuTensor>> run_epilogue(const Op& mm, Inputs ab,
                                                   const fusion::Program& p, int product,
                                                   std::span<GpuTensor> in, Runtime& d) {
  const TensorMeta& pm = p.inputs[size_t(product)];
  if (pm.shape != p.shape || mm.code != OpCode::Matmul || ab.size() != 2) return std::nullopt;
  Chain c = find_chain(p, product, in);
  if (c.steps == 0) return std::nullopt;
  std::optional<GpuTensor> value =
      matmul_epilogue(mm, ab, pm, c.bias >= 0 ? in[size_t(c.bias)].ptr() : 0,
                      c.residual >= 0 ? in[size_t(c.residual)].ptr() : 0, c.relu);
  if (!value) return std::nullopt;
  fusion::detail::count(fusion::detail::Counter::Epilogues);
  fusion::detail::count(fusion::detail::Counter::EpilogueSteps, c.steps);

  std::vector<GpuTensor> rest_in;
  std::vector<int> keep;
  Program r = rest_of(p, c, product, *value, in, rest_in, keep);
  GpuTensor v = std::move(*value);
  std::vector<GpuTensor> rest;
  if (!r.outputs.empty() || r.reduction) {
    // No output keeps the chain's value: the rest may write into it (rest_in's is the only one).
    if (std::find(keep.begin(), keep.end(), -1) == keep.end()) v = GpuTensor{};
    rest = run_fused(r, std::span<GpuTensor>(rest_in), d);
  }
  std::vector<GpuTensor> outs;
  for (int k : keep) outs.push_back(k < 0 ? v : rest[size_t(k)]);
  if (p.reduction) outs.push_back(rest.back());
  return outs;
}

}  // namespace ember::gpu
