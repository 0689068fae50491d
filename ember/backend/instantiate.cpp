// The Dispatch stack is instantiated here once; ember/backend/extern.h tells user code not
// to instantiate it again.
#include "ember/backend/extern.h"
#include "ember/ops/decompose.h"

namespace ember {
template Dispatch::Handle apply<Dispatch>(Op, std::span<Dispatch::Handle>, Device);
template Dispatch::Handle apply<Dispatch>(Op, std::span<Dispatch::Handle>);
template Dispatch::Handle decompose<Dispatch>(const Op&, std::span<Dispatch::Handle>,
                                              const TensorMeta&);
}  // namespace ember
