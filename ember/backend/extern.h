// Declarations of what the library instantiates for Dispatch and Autodiff<Dispatch> (see
// instantiate.cpp), so user code that names these stacks does not instantiate them again.
#pragma once
#include "ember/autodiff/autodiff.h"
#include "ember/backend/apply.h"
#include "ember/backend/dispatch.h"
#include "ember/core/export.h"

namespace ember {
extern template EMBER_API Dispatch::Handle apply<Dispatch>(Op, std::span<Dispatch::Handle>, Device);
extern template EMBER_API Dispatch::Handle apply<Dispatch>(Op, std::span<Dispatch::Handle>);
extern template EMBER_API Dispatch::Handle decompose<Dispatch>(const Op&,
                                                               std::span<Dispatch::Handle>,
                                                               const TensorMeta&);
extern template class EMBER_API Autodiff<Dispatch>;
using AutodiffDispatch = Autodiff<Dispatch>;
extern template EMBER_API AutodiffDispatch::Handle apply<AutodiffDispatch>(
    Op, std::span<AutodiffDispatch::Handle>, Device);
extern template EMBER_API AutodiffDispatch::Handle apply<AutodiffDispatch>(
    Op, std::span<AutodiffDispatch::Handle>);
extern template EMBER_API AutodiffDispatch::Handle decompose<AutodiffDispatch>(
    const Op&, std::span<AutodiffDispatch::Handle>, const TensorMeta&);
}  // namespace ember
