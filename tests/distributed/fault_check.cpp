// Run by fault_test.sh under ember-run: the ranks all-reduce in a loop and rank FAULT_RANK
// kills itself (SIGKILL), or stops (SIGSTOP) with FAULT_MODE=stop, in the middle. The others
// must fail with a DistributedError (exit 3) within the group's timeout, naming a killed rank:
// never hang. `fault_check nccl` all-reduces device memory through NCCL instead, rank r on GPU
// r, waiting as all_reduce_grads waits (exit 77, skipped, with fewer GPUs than ranks).
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ember/distributed/process_group.h"
#ifdef EMBER_DP_CUDA
#include "ember/backends/cuda/driver.h"
#include "ember/distributed/nccl.h"
#endif

int main(int argc, char** argv) {
  using namespace ember;
  int rank = -1;
  try {
    auto pg = dist::ProcessGroup::from_env();
    rank = pg.rank();
    int victim = std::atoi(std::getenv("FAULT_RANK") ? std::getenv("FAULT_RANK") : "1");
    const char* mode = std::getenv("FAULT_MODE");
    int sig = mode && std::string(mode) == "stop" ? SIGSTOP : SIGKILL;
    std::vector<float> g(1 << 16, 1.0f);
    std::function<void()> all_reduce = [&] {
      pg.all_reduce(g.data(), g.size(), dist::Reduce::Mean);
    };
#ifdef EMBER_DP_CUDA
    std::unique_ptr<cuda::Context> ctx;
    std::unique_ptr<cuda::DeviceBuffer> buf;
    if (argc > 1 && std::string(argv[1]) == "nccl") {
      std::string why;
      if (!cuda::available(&why) || cuda::device_count() < pg.world_size() ||
          !dist::nccl_available(&why)) {
        std::printf("rank %d: skipped: NCCL on %d GPUs needs them (%s)\n", rank, pg.world_size(),
                    why.c_str());
        return 77;
      }
      ctx = std::make_unique<cuda::Context>(rank);
      buf = std::make_unique<cuda::DeviceBuffer>(g.size() * sizeof(float));
      buf->upload(g.data(), g.size() * sizeof(float));
      dist::NcclGroup& nccl = pg.nccl(rank);
      all_reduce = [&] {
        nccl.all_reduce(buf->ptr(), g.size(), DType::F32, dist::Reduce::Mean);
        nccl.wait(nullptr, "all_reduce");
      };
    }
#else
    if (argc > 1) {
      std::printf("rank %d: skipped: built without the CUDA backend\n", rank);
      return 77;
    }
#endif
    for (int step = 0; step < 1000; ++step) {
      if (rank == victim && step == 5) raise(sig);
      all_reduce();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::printf("rank %d: finished without noticing\n", rank);
    return 0;
  } catch (const dist::DistributedError& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 3;
  }
}
