// The Dispatch and Autodiff<Dispatch> stacks are instantiated here once; extern.h tells user
// code not to instantiate them again, and its declarations' EMBER_API exports them.
#include "ember/backend/extern.h"
#include "ember/ops/decompose.h"

namespace ember {
template Dispatch::Handle apply<Dispatch>(Op, std::span<Dispatch::Handle>, Device);
template Dispatch::Handle apply<Dispatch>(Op, std::span<Dispatch::Handle>);
template Dispatch::Handle decompose<Dispatch>(const Op&, std::span<Dispatch::Handle>,
                                              const TensorMeta&);
template class Autodiff<Dispatch>;
template AutodiffDispatch::Handle apply<AutodiffDispatch>(Op, std::span<AutodiffDispatch::Handle>,
                                                          Device);
template AutodiffDispatch::Handle apply<AutodiffDispatch>(Op, std::span<AutodiffDispatch::Handle>);
template AutodiffDispatch::Handle decompose<AutodiffDispatch>(const Op&,
                                                              std::span<AutodiffDispatch::Handle>,
                                                              const TensorMeta&);
}  // namespace ember
