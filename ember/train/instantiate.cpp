// The step outputs' code for the Dispatch stacks (Dispatch and Autodiff<Dispatch>), compiled
// once here; output.h declares these instantiations extern.
#include "ember/train/output.h"

namespace ember::train {

EMBER_DETAIL_OUTPUT_INSTANCES(, Dispatch)
EMBER_DETAIL_OUTPUT_INSTANCES(, AutodiffDispatch)

}  // namespace ember::train
