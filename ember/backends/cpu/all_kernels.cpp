// The library's CPU kernel table: every family for every element type. Alone in its file so
// that a static link takes it only when the program defines no table of its own
// (EMBER_CPU_KERNELS, kernel_table.h): a program that does links none of the kernels it leaves
// out.
#include "ember/backends/cpu/kernel_table.h"

namespace ember::cpu {

const KernelTable& kernel_table() { return kernels_of<AllFamilies, AllDTypes>; }

}  // namespace ember::cpu
