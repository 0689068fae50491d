// The CUDA backend's registration with Dispatch. Nothing in ember calls into this file:
// ember::ember's link interface names `ember_cuda_registration` as undefined (-u), which pulls
// this object, and with it the backend, into every program that does not set EMBER_CPU_ONLY
// (ember/CMakeLists.txt). Its initializer only records the factory; the driver is probed when
// the device registry is created, as before.
#include "ember/backend/dispatch.h"
#include "ember/backends/cuda/cuda.h"

extern "C" EMBER_API const bool ember_cuda_registration =
    (ember::register_device_factory(ember::DeviceKind::Cuda, &ember::cuda::make_device_backend),
     true);
