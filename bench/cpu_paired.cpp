// Paired runs: ember's op and a peer's in turn, a batch each per round: a native peer in this
// process, PyTorch in a child process that times its batches itself (torch_server.h).
//
// The suite's rows time ember and the peers seconds to minutes apart (each benchmark runs its
// repetitions back to back, the peers after all of ember's). On a shared machine (a virtual
// machine on a busy host) the load moves on that scale: two runs of the same oneDNN sgemm in
// one call have been 145 and 233 ms. Here every round times each side within a fraction of a
// second of the others, so a slow stretch falls on both, and the ratio is taken per round.
//
// Between batches the process sleeps (`gap_ms`): OpenMP runtimes keep a finished region's
// threads spinning for milliseconds (libgomp's default spin), and a batch of ember started in
// that window shares the CPUs with them (a 512^2 sgemm on 2 CPUs, alternating with oneDNN
// call by call: 3.5-4.0 ms against 1.6 alone). Each batch starts with an untimed iteration,
// which wakes the side's sleeping threads.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <thread>

#include "bench/cpu_bench.h"
#include "ember/core/thread_pool.h"

namespace bench {

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One batch of `op`: the median iteration in ms.
double batch(const Op& op, double batch_ms, double gap_ms) {
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(gap_ms));
  op();  // untimed: wakes the side's threads, warms its caches
  std::vector<double> ms;
  const auto start = Clock::now();
  while (ms.size() < 3 ||
         std::chrono::duration<double, std::milli>(Clock::now() - start).count() < batch_ms) {
    const auto t0 = Clock::now();
    op();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return median(ms);
}

}  // namespace

int run_paired(const std::vector<Paired>& pairs, int rounds, double batch_ms, double gap_ms,
               const std::string& out) {
  const int threads = ember::num_threads();
  std::printf(
      "paired: ember and each peer in turn, %d rounds, batches of %.0f ms %.0f ms apart, %d "
      "threads\nspeedup = peer / ember per round: median [lowest, highest]\n\n",
      rounds, batch_ms, gap_ms, threads);
  std::printf("%-42s %-15s %10s %10s %9s %19s\n", "op", "peer", "ember ms", "peer ms", "speedup",
              "[lowest, highest]");
  std::ofstream json;
  if (!out.empty()) json.open(out);
  bool first = true;
  if (json) json << "[\n";
  try {
    for (const Paired& p : pairs) {
      std::vector<std::function<double()>> sides = {
          [&] { return batch(p.ember, batch_ms, gap_ms); }};
      for (const PairedPeer& peer : p.peers)
        sides.push_back([&] {
          return peer.batch ? peer.batch(batch_ms, gap_ms) : batch(peer.op, batch_ms, gap_ms);
        });
      std::vector<std::vector<double>> t(sides.size());
      for (int r = 0; r < rounds; ++r)
        for (size_t i = 0; i < sides.size(); ++i) {
          const size_t s = (i + size_t(r)) % sides.size();  // who starts rotates
          t[s].push_back(sides[s]());
        }
      for (size_t k = 0; k < p.peers.size(); ++k) {
        std::vector<double> ratio;
        for (int r = 0; r < rounds; ++r) ratio.push_back(t[k + 1][r] / t[0][r]);
        const double e = median(t[0]), q = median(t[k + 1]), sp = median(ratio);
        const auto [lo, hi] = std::minmax_element(ratio.begin(), ratio.end());
        std::printf("%-42s %-15s %10.3f %10.3f %8.2fx     [%.2fx, %.2fx]\n", p.name.c_str(),
                    p.peers[k].who.c_str(), e, q, sp, *lo, *hi);
        if (json) {
          json << (first ? "" : ",\n") << "  {\"name\": \"" << p.name
               << "\", \"backend\": \"cpu\", \"peer\": \"" << p.peers[k].who
               << "\", \"mode\": \"paired\", \"ember_ms\": " << e << ", \"peer_ms\": " << q
               << ", \"speedup\": " << sp << ", \"speedup_lowest\": " << *lo
               << ", \"speedup_highest\": " << *hi << ", \"gflops\": " << p.flop / e / 1e6
               << ", \"peer_gflops\": " << p.flop / q / 1e6 << ", \"rounds\": " << rounds
               << ", \"threads\": " << threads << "}";
          first = false;
        }
      }
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "paired: %s\n", e.what());
    if (json) json << "\n]\n";  // the records so far stay readable
    return 1;
  }
  if (json) json << "\n]\n";
  return 0;
}

}  // namespace bench
