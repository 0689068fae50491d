// How all_reduce_grads (data_parallel.h) moves gradients between the ranks: through the host
// over the process group, or on the device through NCCL.
//
//   ember::dist::GradSyncOptions o{.transport = ember::dist::GradTransport::Nccl};
//   // ember::dist::all_reduce_grads(pg, grads, model, o);
#pragma once
#include <cstddef>

#include "ember/core/device.h"
#include "ember/core/export.h"
#include "ember/distributed/process_group.h"

namespace ember::dist {

/// How all_reduce_grads moves the gradients between the ranks.
enum class GradTransport {
  /// NCCL where the gradients are on a CUDA device, there are 2+ ranks, NCCL loads on all of
  /// them and no two share a GPU; the host otherwise. The environment's EMBER_GRAD_SYNC=host or
  /// =nccl overrides it.
  Auto,
  /// Through the host, over the process group (Gloo): what CPU tensors take.
  Host,
  /// NCCL on the device, through the group's communicator (ProcessGroup::nccl), one rank too.
  Nccl,
};

struct GradSyncOptions {
  /// Gradients travel in f32 buckets of about this size, one all-reduce each.
  size_t bucket_bytes = size_t(25) << 20;
  GradTransport transport = GradTransport::Auto;
};

/// The transport all_reduce_grads takes for gradients on `device` (see GradTransport): with
/// Auto, NCCL where ProcessGroup::nccl_usable (every rank's first call decides together).
/// Throws DistributedError where Nccl is asked for and cannot be had.
EMBER_API GradTransport resolve_grad_transport(ProcessGroup& pg, Device device,
                                               GradTransport asked);

}  // namespace ember::dist
