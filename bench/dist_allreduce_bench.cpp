// ember's side of scripts/bench.sh distributed: the all-reduce (sum) of f32 buffers across the
// ranks of a ProcessGroup (Gloo over loopback), started by ember-run. Rank 0 prints one JSON
// line per size: the median of the repetitions and the algorithm bandwidth (bytes / time).
//   ember-run --nproc 2 -- dist_allreduce_bench [--sizes-mib 1,16,64] [--reps 20]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "ember/distributed/process_group.h"

int main(int argc, char** argv) {
  std::vector<size_t> mib{1, 16, 64};
  int reps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--reps") {
      reps = std::max(1, std::atoi(argv[i + 1]));
    } else if (a == "--sizes-mib") {
      mib.clear();
      std::stringstream ss(argv[i + 1]);
      for (std::string t; std::getline(ss, t, ',');) mib.push_back(size_t(std::stoul(t)));
    } else {
      std::fprintf(stderr, "usage: dist_allreduce_bench [--sizes-mib A,B] [--reps N]\n");
      return 2;
    }
  }
  auto pg = ember::dist::ProcessGroup::from_env();
  for (size_t m : mib) {
    size_t n = m * (size_t(1) << 20) / sizeof(float);
    std::vector<float> buf(n, 1.0f);
    pg.all_reduce(buf.data(), n);  // warm-up: connections, buffers
    std::vector<double> ts;
    for (int r = 0; r < reps; ++r) {
      pg.barrier();
      auto t0 = std::chrono::steady_clock::now();
      pg.all_reduce(buf.data(), n);
      ts.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ts.begin(), ts.end());
    double ms = ts[ts.size() / 2];
    if (pg.rank() == 0)
      std::printf(
          "{\"name\": \"allreduce_f32_%zuMiB\", \"ranks\": %d, \"ms\": %.4f, \"GBps\": %.3f}\n", m,
          pg.world_size(), ms, double(n * sizeof(float)) / (ms * 1e-3) / 1e9);
  }
  return 0;
}
