// The layers', initializers' and losses' code for the Dispatch stacks (Dispatch and
// Autodiff<Dispatch>), compiled once here. Their headers declare these instantiations extern,
// so that programs on those stacks do not compile them again.
#include "ember/nn/init.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/loss/cross_entropy.h"
#include "ember/nn/loss/regression.h"

namespace ember::nn {

EMBER_DETAIL_PARAM_INSTANCES(, Dispatch)
EMBER_DETAIL_PARAM_INSTANCES(, AutodiffDispatch)
EMBER_DETAIL_INIT_INSTANCES(, Dispatch)
EMBER_DETAIL_INIT_INSTANCES(, AutodiffDispatch)
EMBER_DETAIL_LINEAR_INSTANCES(, Dispatch)
EMBER_DETAIL_LINEAR_INSTANCES(, AutodiffDispatch)
EMBER_DETAIL_CROSS_ENTROPY_INSTANCES(, Dispatch)
EMBER_DETAIL_CROSS_ENTROPY_INSTANCES(, AutodiffDispatch)
EMBER_DETAIL_MSE_INSTANCES(, Dispatch)
EMBER_DETAIL_MSE_INSTANCES(, AutodiffDispatch)

}  // namespace ember::nn
