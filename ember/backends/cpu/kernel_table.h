// The CPU backend's kernels, one per op family and element type, and the table Cpu::run takes
// them from. A program gets the library's table, which holds every kernel. A program for
// deployment that knows what it runs may name the families and element types it needs instead
// (an op resolver, as microcontroller runtimes have); it then links only those kernels:
//
//   // in one .cpp file of the program (a static ember, the default build)
//   EMBER_CPU_KERNELS(ember::cpu::Families<ember::OpFamily::Create, ember::OpFamily::Binary,
//                                          ember::OpFamily::Matmul>,
//                     ember::cpu::DTypes<float>)
//
// A kernel it leaves out throws ember::DTypeError when an op asks for it, naming the op, the
// family and the element type. An op's kernel is looked up by the element type of its first
// input (of its output for Create and Where ops); Cast's kernel for a source type converts to
// every type. With a shared libember_cpu the library's table is linked as well, so a shared
// build holds every kernel whatever the program names.
#pragma once
#include <span>

#include "ember/backends/cpu/cpu.h"
#include "ember/core/dtype.h"
#include "ember/ops/op.h"

namespace ember::cpu {

inline constexpr int kNumOpFamilies = static_cast<int>(OpFamily::Composite) + 1;

using Kernel = CpuTensor (*)(const Op& op, std::span<CpuTensor> in, const TensorMeta& out);

/// The kernel of family F for element type T (defined in the library for every pair).
template <OpFamily F, class T>
EMBER_API CpuTensor kernel(const Op& op, std::span<CpuTensor> in, const TensorMeta& out);

/// Kernels by family and element type; nullptr where the program has none.
struct KernelTable {
  Kernel at[kNumOpFamilies][kNumDTypes] = {};
};

/// The table Cpu::run uses: the library's (every kernel), or the program's own when one of its
/// files says EMBER_CPU_KERNELS.
EMBER_API const KernelTable& kernel_table();

template <OpFamily... Fs>
struct Families {};
template <class... Ts>
struct DTypes {};

using AllFamilies = Families<OpFamily::Create, OpFamily::Unary, OpFamily::Binary, OpFamily::Compare,
                             OpFamily::Where, OpFamily::Cast, OpFamily::Reduce, OpFamily::Scan,
                             OpFamily::Sort, OpFamily::Movement, OpFamily::Index, OpFamily::Matmul,
                             OpFamily::Spatial, OpFamily::Composite>;
using AllDTypes =
    DTypes<double, float, f16, bf16, int64_t, int32_t, int16_t, int8_t, uint8_t, bool>;

namespace detail {
template <OpFamily... Fs, class... Ts>
constexpr KernelTable make_kernel_table(Families<Fs...>, DTypes<Ts...>) {
  KernelTable t;
  auto row = [&]<OpFamily F>() {
    ((t.at[static_cast<int>(F)][static_cast<int>(dtype_of<Ts>())] = &kernel<F, Ts>), ...);
  };
  (row.template operator()<Fs>(), ...);
  return t;
}
}  // namespace detail

/// The table of every kernel of the families Fs for the element types Ts (their product).
template <class Fs, class Ts>
inline constexpr KernelTable kernels_of = detail::make_kernel_table(Fs{}, Ts{});

}  // namespace ember::cpu

/// Defines the program's CPU kernel table: EMBER_CPU_KERNELS(Families<...>, DTypes<...>), once,
/// at namespace scope, with the names qualified (ember::cpu::Families, ember::OpFamily::...).
#define EMBER_CPU_KERNELS(...)                                    \
  const ::ember::cpu::KernelTable& ::ember::cpu::kernel_table() { \
    return ::ember::cpu::kernels_of<__VA_ARGS__>;                 \
  }
