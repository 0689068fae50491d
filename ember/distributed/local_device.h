// The device a rank started by ember-run uses (docs/distributed.md): a device kind named without
// an index ("cuda") means this rank's own one, the ranks of a host dealt out to its devices of
// that kind in turn (LOCAL_RANK % their count). Header-only: a program without the distributed
// library uses it too.
//
//   ember::Device dev = ember::dist::local_device("cuda");  // cuda:1 for local rank 1 of 2 GPUs
#pragma once
#include <cstdlib>
#include <string>

#include "ember/backend/dispatch.h"

namespace ember::dist {

/// `name` parsed as a device; under ember-run (LOCAL_RANK set) a kind other than cpu named
/// without an index gets index LOCAL_RANK % (devices of that kind), where there are any.
inline Device local_device(const std::string& name) {
  Device dev = Device::parse(name);
  const char* local = std::getenv("LOCAL_RANK");
  if (!local || dev.kind == DeviceKind::Cpu || name.find(':') != std::string::npos) return dev;
  int count = 0;
  for (Device d : available_devices()) count += d.kind == dev.kind ? 1 : 0;
  if (count > 0) dev.index = std::atoi(local) % count;
  return dev;
}

}  // namespace ember::dist
