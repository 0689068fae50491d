// Replays the kept corpus of the Remote fuzz target (tests/remote/corpus/) through a server
// session: every input ends without a crash or a leaked tensor, and its name says how:
// valid-* is answered without errors, op-error-* gets an error reply and the session goes on,
// reject-* is refused (a protocol error or a refused token closes the session).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../fuzz/fuzz_target.h"
#include "replay.h"
#include "tests/support/read_file.h"

EMBER_FUZZ_TARGET(remote);

namespace ember::remote::test {
namespace {

namespace fs = std::filesystem;

using ember::test::read_file_bytes;

TEST(RemoteCorpus, EveryInputEndsAsItsNameSays) {
  int files = 0, valid = 0, op_errors = 0, rejected = 0;
  for (const auto& e : fs::directory_iterator(EMBER_REMOTE_CORPUS)) {
    if (!e.is_regular_file()) continue;
    ++files;
    std::string name = e.path().filename().string();
    SCOPED_TRACE(name);
    auto bytes = read_file_bytes(e.path());
    EXPECT_EQ(ember_fuzz_remote(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0);
    ServerStats stats;
    ReplayResult r = replay(bytes, stats);
    EXPECT_EQ(stats.live_tensors, 0);
    if (name.rfind("valid-", 0) == 0) {
      ++valid;
      EXPECT_FALSE(r.protocol_error) << r.last_error;
      EXPECT_EQ(r.error_replies, 0) << r.last_error;
      EXPECT_GT(r.replies, 1);
    } else if (name.rfind("op-error-", 0) == 0) {
      ++op_errors;
      EXPECT_FALSE(r.protocol_error) << r.last_error;
      EXPECT_GE(r.error_replies, 1);
      EXPECT_FALSE(r.closed);
    } else if (name.rfind("reject-", 0) == 0) {
      ++rejected;
      EXPECT_TRUE(r.protocol_error || r.closed) << name << " was accepted";
    }
  }
  EXPECT_GE(files, 12);
  EXPECT_GE(valid, 2);
  EXPECT_GE(op_errors, 3);
  EXPECT_GE(rejected, 7);
}

}  // namespace
}  // namespace ember::remote::test
