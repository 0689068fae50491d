// Run by fault_test.sh under ember-run: the ranks all-reduce in a loop and rank FAULT_RANK
// kills itself (SIGKILL), or stops (SIGSTOP) with FAULT_MODE=stop, in the middle. The others
// must fail with a DistributedError (exit 3) within the group's timeout, naming a killed rank:
// never hang.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ember/distributed/process_group.h"

int main() {
  using namespace ember;
  int rank = -1;
  try {
    auto pg = dist::ProcessGroup::from_env();
    rank = pg.rank();
    int victim = std::atoi(std::getenv("FAULT_RANK") ? std::getenv("FAULT_RANK") : "1");
    const char* mode = std::getenv("FAULT_MODE");
    int sig = mode && std::string(mode) == "stop" ? SIGSTOP : SIGKILL;
    std::vector<float> g(1 << 16, 1.0f);
    for (int step = 0; step < 1000; ++step) {
      if (rank == victim && step == 5) raise(sig);
      pg.all_reduce(g.data(), g.size(), dist::Reduce::Mean);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::printf("rank %d: finished without noticing\n", rank);
    return 0;
  } catch (const dist::DistributedError& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 3;
  }
}
