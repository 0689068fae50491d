// The wiring macros of the golden op keys (golden_cases.cpp, golden_breadth.cpp): inside a
// function with `ops` (the key -> call map) and `using A = Args<B>;`,
//   OP("log2", FLT, x.log2());
// maps a key to an expression of `x` (input 0 as Tensor<B, D, K>, for each rank D and each
// kind K listed), with Y and Z inputs 1 and 2 of the same rank and kind.
#pragma once
#include "golden.h"

namespace ember::test {

#define OP(key, kinds, expr)                                                                 \
  ops[key] = [](const A& a) {                                                                \
    return each<kinds>(a, [&]<int D, class K>(const Tensor<B, D, K>& x) { return (expr); }); \
  }
#define FLT Float
#define NUM Float, Int
#define INT Int
#define BOOL Bool
#define ANY Float, Int, Bool
#define Y (a.template t<D, K>(1))
#define Z (a.template t<D, K>(2))

/// The keys of the API-breadth ops (golden_breadth.cpp), added to the map of golden_ops.
template <Backend B>
void add_breadth_ops(std::map<std::string, OpFn<B>>& ops);

}  // namespace ember::test
