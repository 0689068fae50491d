// A lean program built against the installed package: EMBER_CPU_ONLY (no GPU backend linked)
// and a CPU kernel table of its own (f32 matmul, arithmetic and reductions), checked against
// values worked out by hand; a kernel it left out must fail as a DTypeError naming the op.
#include <iostream>
#include <string>
#include <vector>

#include "ember/backends/cpu/kernel_table.h"
#include "ember/ember.h"

EMBER_CPU_KERNELS(ember::cpu::Families<ember::OpFamily::Create, ember::OpFamily::Binary,
                                       ember::OpFamily::Movement, ember::OpFamily::Matmul,
                                       ember::OpFamily::Reduce>,
                  ember::cpu::DTypes<float>)

using namespace ember;

int main() try {
  int failures = 0;
  using T = Tensor<Dispatch, 2>;
  auto a = T::from_data(TensorData::from<float>({1, 2, 3, 4}, {2, 2}));
  std::vector<float> got = (a.matmul(a.transpose()) + 1.0).sum_dim(1).to_vec<float>();
  if (got != std::vector<float>{18, 38}) {
    std::cerr << "matmul + 1 + sum_dim: got " << got[0] << " " << got[1] << "\n";
    ++failures;
  }
  try {
    auto i = Tensor<Dispatch, 1, Int>::from_data(TensorData::from<int64_t>({1, 2}, {2}));
    (void)(i + i).to_vec<int64_t>();
    std::cerr << "i64 add ran without an i64 kernel\n";
    ++failures;
  } catch (const DTypeError& e) {
    if (std::string(e.what()).rfind("[add]", 0) != 0) {
      std::cerr << "unexpected message: " << e.what() << "\n";
      ++failures;
    }
  }
  for (const Device& d : available_devices())
    if (d.kind != DeviceKind::Cpu) {
      std::cerr << "a CPU-only program has device " << d.to_string() << "\n";
      ++failures;
    }
  if (failures == 0) std::cout << "lean_app: ok\n";
  return failures == 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "lean_app: " << e.what() << "\n";
  return 1;
}
