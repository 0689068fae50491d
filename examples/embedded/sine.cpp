// The sine regressor on a microcontroller: sine.h's model on ember::micro with its host-trained
// parameters in flash, on the inputs whose host outputs check.py compares with these. Then an
// error on purpose: a tensor larger than the arena, reported through the installed handler.
#include <setjmp.h>

#include "board.h"
#include "ember/micro/micro.h"
#include "sine.h"
#include "sine_inputs.h"   // generated: the inputs x [N, 1]
#include "sine_weights.h"  // generated: the trained model's parameters

using namespace ember::micro;

namespace {
jmp_buf g_recover;
void on_error(const char* message) {
  printf("error: %s\n", message);
  longjmp(g_recover, 1);  // back to main(): the failed op produced nothing
}
}  // namespace

int main() {
  set_error_handler(on_error);
  board::init();
  board::paint_stack();
  auto model = sine::Sine<Micro>::init(Micro::default_device());
  nn::load_module(model, sine_weights::record);

  const RecordEntry& xs = sine_inputs::entries[0];  // its one tensor: "x" [N, 1]
  const int n = static_cast<int>(xs.dims[0]);
  auto x = Tensor<Micro, 2>::from_const(xs.data, {n, 1});
  board::start();
  Tensor<Micro, 2> y = model.forward(x);  // the whole batch at once
  const uint32_t batch_insns = board::instructions();
  board::print_floats("y", 0, y.data(), n);
  printf("batch %d instructions %lu\n", n, static_cast<unsigned long>(batch_insns));
  for (int i = 0; i < n; ++i) {  // and one at a time, as a sensor loop would
    auto xi = Tensor<Micro, 2>::from_const(xs.data + i, {1, 1});
    board::start();
    Tensor<Micro, 2> yi = model.forward(xi);
    const uint32_t insns = board::instructions();
    board::print_floats("y1", i, yi.data(), 1);
    printf("instructions %d %lu\n", i, static_cast<unsigned long>(insns));
  }
  const ArenaStats a = arena_stats();
  printf("arena %lu high_water %lu\n", static_cast<unsigned long>(a.capacity),
         static_cast<unsigned long>(a.high_water));
  printf("stack_high_water %lu\n", static_cast<unsigned long>(board::stack_high_water()));

  if (setjmp(g_recover) == 0) {
    auto big = Tensor<Micro, 2>::zeros({1024, 1024});  // 4 MiB: more than any arena here
    printf("unexpected: %d elements allocated\n", static_cast<int>(big.numel()));
    return 1;
  }
  printf("recovered: arena in use %lu\n", static_cast<unsigned long>(arena_stats().in_use));
  printf("done\n");
  return 0;
}
