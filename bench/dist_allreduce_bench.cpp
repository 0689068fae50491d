// ember's side of scripts/bench.sh distributed: the all-reduce (sum) of f32 buffers across the
// ranks of a ProcessGroup (Gloo over loopback), or with --nccl of device buffers through the
// group's NCCL communicator (rank r on GPU r, waited for by NcclGroup::wait as all_reduce_grads
// waits), started by ember-run. Rank 0 prints one JSON line per size: the median of the
// repetitions and the algorithm bandwidth (bytes / time).
//   ember-run --nproc 2 -- dist_allreduce_bench [--sizes-mib 1,16,64] [--reps 20] [--nccl]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "ember/distributed/process_group.h"
#ifdef EMBER_BENCH_NCCL
#include "ember/backends/cuda/driver.h"
#include "ember/distributed/nccl.h"
#endif

int main(int argc, char** argv) {
  std::vector<size_t> mib{1, 16, 64};
  int reps = 20;
  bool nccl = false;
  for (int i = 1; i < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--nccl") {
      nccl = true;
      --i;
    } else if (i + 1 >= argc) {
      std::fprintf(stderr, "usage: dist_allreduce_bench [--sizes-mib A,B] [--reps N] [--nccl]\n");
      return 2;
    } else if (a == "--reps") {
      reps = std::max(1, std::atoi(argv[i + 1]));
    } else if (a == "--sizes-mib") {
      mib.clear();
      std::stringstream ss(argv[i + 1]);
      for (std::string t; std::getline(ss, t, ',');) mib.push_back(size_t(std::stoul(t)));
    } else {
      std::fprintf(stderr, "usage: dist_allreduce_bench [--sizes-mib A,B] [--reps N] [--nccl]\n");
      return 2;
    }
  }
  auto pg = ember::dist::ProcessGroup::from_env();
  auto report = [&](size_t m, size_t n, std::vector<double>& ts, const char* via) {
    std::sort(ts.begin(), ts.end());
    double ms = ts[ts.size() / 2];
    if (pg.rank() == 0)
      std::printf(
          "{\"name\": \"allreduce_f32_%zuMiB\", \"ranks\": %d, \"via\": \"%s\", \"ms\": %.4f, "
          "\"GBps\": %.3f}\n",
          m, pg.world_size(), via, ms, double(n * sizeof(float)) / (ms * 1e-3) / 1e9);
  };
  using Clock = std::chrono::steady_clock;
  if (nccl) {
#ifdef EMBER_BENCH_NCCL
    std::string why;
    if (!ember::cuda::available(&why) || !ember::dist::nccl_available(&why)) {
      std::fprintf(stderr, "dist_allreduce_bench --nccl: %s\n", why.c_str());
      return 1;
    }
    ember::cuda::Context ctx(pg.rank());
    ember::dist::NcclGroup& g = pg.nccl(pg.rank());
    for (size_t m : mib) {
      size_t n = m * (size_t(1) << 20) / sizeof(float);
      ember::cuda::DeviceBuffer buf(n * sizeof(float));
      std::vector<float> ones(n, 1.0f);
      buf.upload(ones.data(), n * sizeof(float));
      g.all_reduce(buf.ptr(), n, ember::DType::F32, ember::dist::Reduce::Sum);
      g.wait(nullptr);
      std::vector<double> ts;
      for (int r = 0; r < reps; ++r) {
        pg.barrier();
        auto t0 = Clock::now();
        g.all_reduce(buf.ptr(), n, ember::DType::F32, ember::dist::Reduce::Sum);
        g.wait(nullptr);
        ts.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      }
      report(m, n, ts, "nccl");
    }
    return 0;
#else
    std::fprintf(stderr, "dist_allreduce_bench: built without the CUDA backend (no --nccl)\n");
    return 2;
#endif
  }
  for (size_t m : mib) {
    size_t n = m * (size_t(1) << 20) / sizeof(float);
    std::vector<float> buf(n, 1.0f);
    pg.all_reduce(buf.data(), n);  // warm-up: connections, buffers
    std::vector<double> ts;
    for (int r = 0; r < reps; ++r) {
      pg.barrier();
      auto t0 = Clock::now();
      pg.all_reduce(buf.data(), n);
      ts.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    report(m, n, ts, "gloo");
  }
  return 0;
}
