// Declarations of what the library instantiates for Dispatch and Autodiff<Dispatch> (see
// instantiate.cpp), so user code that names these stacks does not instantiate them again.
#pragma once
#include "ember/autodiff/autodiff.h"
#include "ember/backend/apply.h"
#include "ember/backend/dispatch.h"

namespace ember {
extern template Dispatch::Handle apply<Dispatch>(Op, std::span<Dispatch::Handle>, Device);
extern template Dispatch::Handle apply<Dispatch>(Op, std::span<Dispatch::Handle>);
extern template Dispatch::Handle decompose<Dispatch>(const Op&, std::span<Dispatch::Handle>,
                                                     const TensorMeta&);
extern template class Autodiff<Dispatch>;
using AutodiffDispatch = Autodiff<Dispatch>;
extern template AutodiffDispatch::Handle apply<AutodiffDispatch>(
    Op, std::span<AutodiffDispatch::Handle>, Device);
extern template AutodiffDispatch::Handle apply<AutodiffDispatch>(
    Op, std::span<AutodiffDispatch::Handle>);
extern template AutodiffDispatch::Handle decompose<AutodiffDispatch>(
    const Op&, std::span<AutodiffDispatch::Handle>, const TensorMeta&);
}  // namespace ember
