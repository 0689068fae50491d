// The optimizers' and gradients' code that works on a module's slots, compiled once here for
// Autodiff<Dispatch> (their headers declare these instantiations extern), so that programs
// training on that stack do not compile it again.
#include "ember/optim/adagrad.h"
#include "ember/optim/adam.h"
#include "ember/optim/adamw.h"
#include "ember/optim/adan.h"
#include "ember/optim/grads.h"
#include "ember/optim/muon.h"
#include "ember/optim/rmsprop.h"
#include "ember/optim/sgd.h"

namespace ember::optim {

template class GradientsParams<AutodiffDispatch>;
template class Optimizer<Sgd<AutodiffDispatch>, AutodiffDispatch>;
template class Optimizer<Adam<AutodiffDispatch>, AutodiffDispatch>;
template class Optimizer<AdamW<AutodiffDispatch>, AutodiffDispatch>;
template class Optimizer<AdaGrad<AutodiffDispatch>, AutodiffDispatch>;
template class Optimizer<RmsProp<AutodiffDispatch>, AutodiffDispatch>;
template class Optimizer<Adan<AutodiffDispatch>, AutodiffDispatch>;
template class Optimizer<Muon<AutodiffDispatch>, AutodiffDispatch>;

}  // namespace ember::optim
