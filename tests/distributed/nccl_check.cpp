// Run by ember-run (ctest: 1 rank; on a machine with N GPUs, N ranks): NCCL all-reduce in four
// ops and broadcast of device memory, rank r on GPU r, against what each rank computes from the
// others' known inputs. Exits 77 (skipped) without a GPU or NCCL, 1 on a mismatch.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "ember/backends/cuda/driver.h"
#include "ember/distributed/nccl.h"

using namespace ember;

int main() {
  int rank = 0;
  try {
    auto pg = dist::ProcessGroup::from_env();
    rank = pg.rank();
    int w = pg.world_size();
    std::string why;
    if (!cuda::available(&why)) {
      std::printf("rank %d: skipped: no CUDA GPU (%s)\n", rank, why.c_str());
      return 77;
    }
    if (!dist::nccl_available(&why)) {
      std::printf("rank %d: skipped: %s\n", rank, why.c_str());
      return 77;
    }
    if (rank == 0) std::printf("NCCL %d, %d rank(s)\n", dist::nccl_version(), w);
    cuda::Context ctx(rank);
    dist::NcclGroup nccl(pg, rank);
    const size_t n = (size_t(1) << 20) + 3;
    auto input = [](int r, size_t i) { return float((r + 1) * int(i % 101)) - 0.5f * float(r); };
    std::vector<float> host(n), got(n);
    cuda::DeviceBuffer buf(n * sizeof(float));
    int bad = 0;
    for (dist::Reduce op :
         {dist::Reduce::Sum, dist::Reduce::Mean, dist::Reduce::Max, dist::Reduce::Min}) {
      for (size_t i = 0; i < n; ++i) host[i] = input(rank, i);
      buf.upload(host.data(), n * sizeof(float));
      nccl.all_reduce(buf.ptr(), n, DType::F32, op);
      buf.download(got.data(), n * sizeof(float));
      for (size_t i = 0; i < n; i += 13) {
        double want = op == dist::Reduce::Max ? -1e30 : op == dist::Reduce::Min ? 1e30 : 0;
        for (int r = 0; r < w; ++r) {
          double v = input(r, i);
          want = op == dist::Reduce::Max   ? std::max(want, v)
                 : op == dist::Reduce::Min ? std::min(want, v)
                                           : want + v;
        }
        if (op == dist::Reduce::Mean) want /= w;
        if (std::abs(got[i] - want) > 1e-4 * (1 + std::abs(want)) && bad++ < 5)
          std::fprintf(stderr, "rank %d: op %d at %zu: %g vs %g\n", rank, int(op), i, got[i], want);
      }
    }
    for (size_t i = 0; i < n; ++i) host[i] = input(rank, i);
    buf.upload(host.data(), n * sizeof(float));
    nccl.broadcast(buf.ptr(), n, DType::F32, w - 1);
    buf.download(got.data(), n * sizeof(float));
    for (size_t i = 0; i < n; i += 13)
      if (got[i] != input(w - 1, i) && bad++ < 5)
        std::fprintf(stderr, "rank %d: broadcast at %zu\n", rank, i);
    try {
      nccl.all_reduce(buf.ptr(), 1, DType::Bool, dist::Reduce::Sum);
      std::fprintf(stderr, "rank %d: a bool all-reduce did not throw\n", rank), ++bad;
    } catch (const DTypeError&) {
    }
    std::printf("rank %d of %d: %s\n", rank, w, bad ? "FAILED" : "ok");
    return bad ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 1;
  }
}
