// Internal: the CUDA backend's diagnostic switches, read from the environment.
//
//   static const bool trace = cuda::env_switch("EMBER_CUDNN_TRACE");  // set, not "" or "0"
#pragma once
#include <cstdlib>
#include <string_view>

namespace ember::cuda {

/// Whether the environment variable `name` is set to something other than "" or "0". Callers
/// keep the answer in a function-local static: the environment is read once.
inline bool env_switch(const char* name) {
  const char* e = std::getenv(name);
  return e && *e && std::string_view(e) != "0";
}

}  // namespace ember::cuda
