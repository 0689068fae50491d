// The Remote backend's registration with Dispatch: a program that links ember::remote gets this
// object through the link option `-u ember_remote_registration`, and with it remote:HOST:PORT.
#include "ember/backends/remote/client.h"

extern "C" EMBER_API const bool ember_remote_registration =
    (ember::register_device_factory(ember::DeviceKind::Remote, &ember::remote::make_device_backend),
     true);
