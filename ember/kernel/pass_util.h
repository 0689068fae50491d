// Helpers shared by the passes (private to ember/kernel).
#pragma once
#include <vector>

#include "ember/kernel/ir.h"

namespace ember::kernel::detail {

/// For each value, the index of its defining instruction (-1 when none).
inline std::vector<int> def_index(const Kernel& k) {
  std::vector<int> d(k.num_values, -1);
  for (size_t i = 0; i < k.body.size(); ++i)
    if (k.body[i].result != kNoValue && k.body[i].result < k.num_values)
      d[k.body[i].result] = static_cast<int>(i);
  return d;
}

/// For each If/Else/For, the index of the marker that ends its block (Else or End*), and for
/// each End*/Else the index of the marker that opened it.
inline std::vector<int> block_partner(const Kernel& k) {
  std::vector<int> p(k.body.size(), -1), stack;
  for (size_t i = 0; i < k.body.size(); ++i) {
    Op op = k.body[i].op;
    if (op == Op::Else || op == Op::EndIf || op == Op::EndFor) {
      if (stack.empty()) continue;
      p[stack.back()] = static_cast<int>(i);
      p[i] = stack.back();
      stack.pop_back();
    }
    if (op == Op::If || op == Op::For || op == Op::Else) stack.push_back(static_cast<int>(i));
  }
  return p;
}

/// Rewrites every operand through `repl` (repl[v] == v for values kept), following chains.
inline void substitute(Kernel& k, std::vector<ValueId>& repl) {
  auto find = [&](ValueId v) {
    while (v < repl.size() && repl[v] != v) v = repl[v];
    return v;
  };
  for (Inst& i : k.body)
    for (ValueId& a : i.args) a = find(a);
}

/// Drops the instructions marked in `drop`.
inline void compact(Kernel& k, const std::vector<bool>& drop) {
  size_t o = 0;
  for (size_t i = 0; i < k.body.size(); ++i)
    if (!drop[i]) {
      if (o != i) k.body[o] = std::move(k.body[i]);  // a self-move would empty the operands
      ++o;
    }
  k.body.resize(o);
}

inline std::vector<ValueId> identity_map(const Kernel& k) {
  std::vector<ValueId> r(k.num_values);
  for (ValueId v = 0; v < k.num_values; ++v) r[v] = v;
  return r;
}

}  // namespace ember::kernel::detail
