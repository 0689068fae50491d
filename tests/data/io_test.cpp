// read_file on what is not a readable file: a folder, a missing path, a file without read
// permission (checked as "nobody" when the tests run as root), a file whose read fails, and
// files whose size is not what stat says.
#include "ember/data/io.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ember/core/error.h"
#include "ember/data/image.h"
#include "tests/data/expect_message.h"
#include "tests/data/temp_dir.h"

namespace ember::data {
namespace {

namespace fs = std::filesystem;
using ember::test::TempDir;

TEST(ReadFile, AFolderIsAClearError) {
  TempDir t;
  EXPECT_MESSAGE(read_file(t.path(), "image"), ValueError,
                 "[image] cannot read " + t.path().string() + ": it is a folder, not a file");
  // What `mnist infer <folder>` runs into.
  EXPECT_MESSAGE(load_image(t.path(), 1), ValueError, "it is a folder, not a file");
}

TEST(ReadFile, AMissingFileNamesThePath) {
  TempDir t;
  EXPECT_MESSAGE(
      read_file(t / "nope.png", "image"), ValueError,
      "[image] cannot open " + (t / "nope.png").string() + ": No such file or directory");
  EXPECT_MESSAGE(read_file(t / "a" / "b", "csv"), ValueError, "No such file or directory");
}

TEST(ReadFile, AFailingReadNamesThePath) {
  // /proc/self/mem opens, but reading at offset 0 (unmapped memory) fails with EIO, for root
  // too.
  EXPECT_MESSAGE(read_file("/proc/self/mem", "image"), ValueError,
                 "[image] cannot read /proc/self/mem: Input/output error");
}

TEST(ReadFile, AnUnreadableFileNamesThePath) {
  TempDir t;
  const fs::path f = t / "secret.png";
  ember::test::write_text(f, "x");
  fs::permissions(f, fs::perms::none);
  fs::permissions(t.path(), fs::perms(0755));
  if (::geteuid() != 0) {
    EXPECT_MESSAGE(read_file(f, "image"), ValueError,
                   "[image] cannot open " + f.string() + ": Permission denied");
    return;
  }
  // Root reads anything: the check runs in a child that drops to "nobody" (uid 65534).
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    const std::string msg = ember::test::message_of([&] { read_file(f, "image"); });
    ::_exit(msg == "[image] cannot open " + f.string() + ": Permission denied" ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: another message, 3: could not become nobody";
}

TEST(ReadFile, ReadsUntilTheEndWhateverStatSays) {
  TempDir t;
  ember::test::write_text(t / "a.txt", "hello");
  const auto bytes = read_file(t / "a.txt", "x");
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "hello");
  ember::test::write_text(t / "empty", "");
  EXPECT_TRUE(read_file(t / "empty", "x").empty());
  // /proc files report size 0 and still have content.
  const auto status = read_file("/proc/self/status", "x");
  EXPECT_NE(std::string(status.begin(), status.end()).find("Name:"), std::string::npos);
  // A device that is not a file is refused rather than read forever.
  EXPECT_MESSAGE(read_file("/dev/zero", "x"), ValueError,
                 "[x] cannot read /dev/zero: it is not a regular file");
}

}  // namespace
}  // namespace ember::data
