// The models' layers in a freestanding build (EMBER_FREESTANDING, examples/embedded):
// ember::micro's, under the host's names, so mlp.h and cnn.h compile for a microcontroller
// as they are. The host build includes the library's layers and model.h instead.
#pragma once
#include "ember/micro/as_ember.h"

namespace mnist {
using namespace ember;
}  // namespace mnist
