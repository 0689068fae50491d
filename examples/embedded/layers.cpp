// layers_net.h on a microcontroller: every freestanding layer with the host's random
// parameters in flash, on the host's random inputs; check.py compares the outputs with the
// CPU backend's.
#include <cstring>

#include "board.h"
#include "ember/micro/micro.h"
#include "layers_inputs.h"  // generated: "seq" [10, 1, 6] and "conv" [1, 4, 16]
#include "layers_net.h"
#include "layers_weights.h"  // generated: the host's random parameters

using namespace ember::micro;

namespace {
void on_error(const char* message) { printf("error: %s\n", message); }
/// The input tensor `name` of the generated record.
const RecordEntry& input(const char* name) {
  for (const RecordEntry& e : layers_inputs::entries)
    if (std::strcmp(e.name, name) == 0) return e;
  fail("[layers] no input '%s'", name);
}
template <int D>
Tensor<Micro, D> tensor_of(const RecordEntry& e) {
  std::array<int64_t, D> dims{};
  for (int i = 0; i < D; ++i) dims[i] = e.dims[i];
  return Tensor<Micro, D>::from_const(e.data, dims);
}
}  // namespace

int main() {
  set_error_handler(on_error);
  board::init();
  board::paint_stack();
  auto model = layers::LayersNet<Micro>::init(Micro::default_device());
  nn::load_module(model, layers_weights::record);

  board::start();
  auto ys = model.forward_seq(tensor_of<3>(input("seq")));
  printf("instructions 0 %lu\n", static_cast<unsigned long>(board::instructions()));
  board::start();
  auto yc = model.forward_conv(tensor_of<3>(input("conv")));
  printf("instructions 1 %lu\n", static_cast<unsigned long>(board::instructions()));
  const int32_t ids[] = {3, 0, 19, 7, 7, 12};  // as in reference.cpp
  auto ye = model.emb.forward<2>(ids, {2, 3});
  board::print_floats("seq", 0, ys.data(), static_cast<int>(ys.numel()));
  board::print_floats("emb", 0, ye.data(), static_cast<int>(ye.numel()));
  board::print_floats("conv", 0, yc.data(), static_cast<int>(yc.numel()));
  const ArenaStats a = arena_stats();
  printf("arena %lu high_water %lu\n", static_cast<unsigned long>(a.capacity),
         static_cast<unsigned long>(a.high_water));
  printf("stack_high_water %lu\n", static_cast<unsigned long>(board::stack_high_water()));
  printf("done\n");
  return 0;
}
