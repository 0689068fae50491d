// The Remote backend against a real ember-server process, through Dispatch's remote device: a
// server killed with SIGKILL is an error within the timeout, not a hang, and a server started
// again on the same port accepts a new session on the next op of that device, while tensors
// of the dead session say that they are gone.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "ember/backends/remote/client.h"
#include "ember/ember.h"

extern char** environ;

namespace ember::remote::test {
namespace {

namespace fs = std::filesystem;
using T1 = Tensor<Dispatch, 1>;
using Clock = std::chrono::steady_clock;

struct ServerProcess {
  // Starts ember-server on `port` (0: any free port) and waits until it listens.
  ServerProcess(const fs::path& dir, int port) {
    fs::remove(dir / "port");
    std::string listen = "127.0.0.1:" + std::to_string(port);
    std::vector<std::string> args = {EMBER_SERVER,    "--listen",     listen,
                                     "--port-file",   (dir / "port"), "--token-file",
                                     (dir / "token"), "--threads",    "2"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) pid = -1;
    for (int i = 0; i < 200 && !fs::exists(dir / "port"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::ifstream(dir / "port") >> this->port;
  }
  ~ServerProcess() { stop(SIGTERM); }
  void stop(int signal) {
    if (pid <= 0) return;
    kill(pid, signal);
    int status = 0;
    waitpid(pid, &status, 0);
    pid = -1;
  }
  pid_t pid = -1;
  int port = 0;
};

TEST(RemoteProcess, AKilledServerIsAnErrorAndARestartedOneServesAgain) {
  fs::path dir = fs::temp_directory_path() / ("ember_remote_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "token") << "process-test-token\n";
  setenv("EMBER_REMOTE_TOKEN", "process-test-token", 1);
  setenv("EMBER_REMOTE_TIMEOUT", "5", 1);

  auto first = std::make_unique<ServerProcess>(dir, 0);
  ASSERT_GT(first->port, 0) << "ember-server did not start";
  int port = first->port;
  Device dev = Device::parse("remote:127.0.0.1:" + std::to_string(port));
  auto x = T1::from_data(TensorData::from<float>({1, 2, 3}, Shape{3}), dev);
  auto y = (x * 2.0f).exp();
  EXPECT_TRUE(y.to_data().all_close((T1::from_data(x.to_data()) * 2.0f).exp().to_data()));

  first->stop(SIGKILL);
  auto z = y + 1.0f;  // queued: the client does not know yet
  auto t0 = Clock::now();
  try {
    z.to_data();
    ADD_FAILURE() << "a read from a killed server returned";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << e.what();
    std::printf("after SIGKILL, in %.1f ms: %s\n",
                std::chrono::duration<double, std::milli>(Clock::now() - t0).count(), e.what());
  }
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));

  ServerProcess second(dir, port);
  ASSERT_EQ(second.port, port) << "ember-server did not start again on port " << port;
  auto w = T1::from_data(TensorData::from<float>({4, 5}, Shape{2}), dev);  // a new session
  EXPECT_EQ((w + w).to_data(), TensorData::from<float>({8, 10}, Shape{2}));
  try {
    (x + x).to_data();
    ADD_FAILURE() << "a tensor of the killed server's session was used";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("a tensor of a closed session"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(connection_of(dev)->sync().live_tensors, 1u);  // w only
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ember::remote::test
