// Declarations of what the library instantiates for Dispatch (see instantiate.cpp).
#pragma once
#include "ember/backend/apply.h"
#include "ember/backend/dispatch.h"

namespace ember {
extern template Dispatch::Handle apply<Dispatch>(Op, std::span<Dispatch::Handle>, Device);
extern template Dispatch::Handle apply<Dispatch>(Op, std::span<Dispatch::Handle>);
extern template Dispatch::Handle decompose<Dispatch>(const Op&, std::span<Dispatch::Handle>,
                                                     const TensorMeta&);
}  // namespace ember
