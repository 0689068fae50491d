// Fuzz target for the Remote server's message handling: the input is the byte stream a client
// sends on one connection, cut into frames, decoded and handled by a fresh session exactly as
// the server does (replay.h), with small limits and the token "fuzz". Every input must end in
// replies, a ProtocolError (the session closes) or a handled op error; a crash, a sanitizer
// report, another exception or a tensor left alive after the session is a bug.
//
//   scripts/fuzz.sh remote 300      # libFuzzer (clang), 5 minutes from tests/remote/corpus
//   build/tests/remote/remote_mutate tests/remote/corpus 100000   # random mutations (gcc)
//
// The kept corpus (tests/remote/corpus/) is replayed by remote_test in every test build.
#include <cstdlib>

#include "../fuzz/fuzz_target.h"
#include "replay.h"

EMBER_FUZZ_TARGET(remote) {
  using namespace ember::remote;
  ServerStats stats;
  test::ReplayResult r = test::replay({reinterpret_cast<const std::byte*>(data), size}, stats);
  if (r.replies > r.frames) std::abort();
  if (stats.live_tensors != 0 || stats.live_bytes != 0) std::abort();  // the session freed all
  return 0;
}
