// The main job's Fashion-MNIST classifier on a microcontroller: examples/mnist's model source
// (mlp.h or cnn.h, chosen by EMBER_EMBEDDED_CNN) on ember::micro, its host record converted to
// flash arrays (tools/micro_weights.py), run on the test images whose host logits check.py
// compares with these.
#include "board.h"
#include "classifier_inputs.h"   // generated: the test images
#include "classifier_weights.h"  // generated: the trained model's parameters
#include "ember/micro/micro.h"

#ifdef EMBER_EMBEDDED_CNN
#include "../mnist/cnn.h"
template <class B>
using Model = mnist::Cnn<B>;
#else
#include "../mnist/mlp.h"
template <class B>
using Model = mnist::Mlp<B>;
#endif

using namespace ember::micro;

namespace {
void on_error(const char* message) { printf("error: %s\n", message); }
}  // namespace

int main() {
  set_error_handler(on_error);
  board::init();
  board::paint_stack();
  auto model = Model<Micro>::init(Micro::default_device());
  nn::load_module(model, classifier_weights::record);

  const RecordEntry& images =
      classifier_inputs::entries[0];  // its one tensor: "images" [N, 1, 28, 28]
  const int n = static_cast<int>(images.dims[0]);
  for (int i = 0; i < n; ++i) {
    auto x = Tensor<Micro, 4>::from_const(images.data + i * 784, {1, 1, 28, 28});
    board::start();
    Tensor<Micro, 2> logits = model.forward(x);
    const uint32_t insns = board::instructions();
    int best = 0;
    for (int c = 1; c < 10; ++c)
      if (logits.data()[c] > logits.data()[best]) best = c;
    board::print_floats("logits", i, logits.data(), 10);
    printf("class %d %d\ninstructions %d %lu\n", i, best, i, static_cast<unsigned long>(insns));
  }
  const ArenaStats a = arena_stats();
  printf("arena %lu high_water %lu\n", static_cast<unsigned long>(a.capacity),
         static_cast<unsigned long>(a.high_water));
  printf("stack_high_water %lu\n", static_cast<unsigned long>(board::stack_high_water()));
  printf("done\n");
  return 0;
}
