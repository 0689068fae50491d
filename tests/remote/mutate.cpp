// A random-mutation fuzzer of the Remote server's message handling for builds without libFuzzer:
// takes the kept corpus, mutates it (bit flips, byte values, cuts, duplications, splices,
// frame-length edits) and replays each result through a session (replay.h). Anything but a
// clean end (replies, an op error or a protocol error) aborts with the input saved.
//
//   build/tests/remote/remote_mutate tests/remote/corpus 100000 [SEED]
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "replay.h"
#include "tests/support/read_file.h"

using namespace ember::remote;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: remote_mutate CORPUS_DIR ITERATIONS [SEED]\n");
    return 2;
  }
  std::vector<std::vector<std::byte>> corpus;
  for (const auto& e : fs::directory_iterator(argv[1]))
    corpus.push_back(ember::test::read_file_bytes(e.path()));
  if (corpus.empty()) {
    std::fprintf(stderr, "remote_mutate: no inputs in %s\n", argv[1]);
    return 2;
  }
  long iterations = std::atol(argv[2]);
  std::mt19937_64 rng(argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1);
  auto pick = [&](size_t n) { return n ? static_cast<size_t>(rng() % n) : 0; };
  long protocol_errors = 0, op_errors = 0, clean = 0;
  for (long it = 0; it < iterations; ++it) {
    std::vector<std::byte> in = corpus[pick(corpus.size())];
    int edits = 1 + static_cast<int>(pick(4));
    for (int e = 0; e < edits && !in.empty(); ++e) {
      switch (pick(7)) {
        case 0:
          in[pick(in.size())] ^= std::byte{static_cast<uint8_t>(1u << pick(8))};
          break;
        case 1:
          in[pick(in.size())] = std::byte{static_cast<uint8_t>(rng())};
          break;
        case 2:
          in.resize(pick(in.size() + 1));
          break;
        case 3: {  // duplicate a slice
          size_t a = pick(in.size()), n = pick(std::min<size_t>(64, in.size() - a) + 1);
          std::vector<std::byte> slice(in.begin() + a, in.begin() + a + n);
          in.insert(in.begin() + pick(in.size() + 1), slice.begin(), slice.end());
          break;
        }
        case 4: {  // splice another input's tail
          const auto& o = corpus[pick(corpus.size())];
          in.resize(pick(in.size() + 1));
          in.insert(in.end(), o.begin() + pick(o.size()), o.end());
          break;
        }
        case 5: {  // an interesting 8-byte value at a random place (ids, lengths, dims)
          static const uint64_t vals[] = {0,          1,          2,          0x7f,  0xffff,
                                          1ull << 31, 1ull << 32, 1ull << 62, ~0ull, ~0ull - 1};
          uint64_t v = vals[pick(std::size(vals))];
          size_t at = pick(in.size());
          for (int i = 0; i < 8 && at + i < in.size(); ++i)
            in[at + i] = std::byte{static_cast<uint8_t>(v >> (8 * i))};
          break;
        }
        default:
          in[pick(in.size())] = std::byte{static_cast<uint8_t>(pick(16))};
          break;
      }
    }
    ServerStats stats;
    test::ReplayResult r;
    try {
      r = test::replay(in, stats);
    } catch (const std::exception& e) {
      std::ofstream("remote_mutate_crash.bin", std::ios::binary)
          .write(reinterpret_cast<const char*>(in.data()), static_cast<std::streamsize>(in.size()));
      std::fprintf(stderr,
                   "remote_mutate: iteration %ld: %s escaped (input in "
                   "remote_mutate_crash.bin)\n",
                   it, e.what());
      return 1;
    }
    if (stats.live_tensors != 0 || stats.live_bytes != 0) {
      std::fprintf(stderr, "remote_mutate: iteration %ld left tensors alive\n", it);
      return 1;
    }
    r.protocol_error ? ++protocol_errors : r.error_replies ? ++op_errors : ++clean;
  }
  std::printf(
      "remote_mutate: %ld inputs: %ld closed by a protocol error, %ld with op errors, "
      "%ld clean\n",
      iterations, protocol_errors, op_errors, clean);
  return 0;
}
