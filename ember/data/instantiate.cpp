// The MNIST batcher and its loaders for the Dispatch stacks (Dispatch and Autodiff<Dispatch>),
// compiled once here; batcher.h declares these instantiations extern.
#include "ember/data/batcher.h"

namespace ember::data {

template class MnistBatcher<Dispatch>;
template class MnistBatcher<AutodiffDispatch>;
template class DataLoader<MnistDataset, MnistBatcher<Dispatch>>;
template class DataLoader<MnistDataset, MnistBatcher<AutodiffDispatch>>;

}  // namespace ember::data
