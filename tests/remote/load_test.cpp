// Load: 16 concurrent clients, each running $EMBER_REMOTE_LOAD_OPS small ops (default 10,000)
// on its own session without waiting for them, then reading its result. Every result must
// equal the CPU backend's for the same ops (nothing lost, nothing reordered), and once the
// clients are gone the server must hold no session, tensor or byte.
#include <gtest/gtest.h>

#include <cstdlib>

#include "ember/ember.h"
#include "remote_fixture.h"

namespace ember::remote::test {
namespace {

int ops_per_client() {
  const char* env = std::getenv("EMBER_REMOTE_LOAD_OPS");
  int n = env && *env ? std::atoi(env) : 10000;
  return n > 0 ? n : 10000;
}

// Client k: acc = x; then acc = acc * x + x, alternating with acc = acc - x (bounded values).
Op step_op(int i) { return Op{i % 2 ? OpCode::Sub : OpCode::Add, {}}; }

TensorData cpu_oracle(const TensorData& x, int n) {
  using T1 = Tensor<Dispatch, 1>;
  auto xs = T1::from_data(x, Device::cpu());
  auto acc = xs;
  for (int i = 0; i < n; ++i) acc = i % 2 ? acc - xs : acc + xs;
  return acc.to_data();
}

TEST(RemoteLoad, SixteenClientsLoseNothingAndLeakNothing) {
  constexpr int kClients = 16;
  const int n = ops_per_client();
  LocalServer s;
  std::vector<TensorData> inputs, results(kClients);
  for (int k = 0; k < kClients; ++k) {
    std::vector<float> v(16);
    for (int j = 0; j < 16; ++j) v[j] = static_cast<float>(k) + 0.25f * static_cast<float>(j);
    inputs.push_back(TensorData::from(v, Shape{16}));
  }
  std::vector<std::string> errors(kClients);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int k = 0; k < kClients; ++k)
    threads.emplace_back([&, k] {
      try {
        Connection c(s.endpoint(), kToken);
        TensorMeta meta{Shape{16}, DType::F32};
        uint64_t x = c.upload(inputs[k]), acc = x;
        for (int i = 0; i < n; ++i) {
          uint64_t ids[] = {acc, x};
          uint64_t next = c.run(step_op(i), ids, meta);
          if (acc != x) c.release(acc);
          acc = next;
        }
        results[k] = c.download(acc);
      } catch (const std::exception& e) {
        errors[k] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (int k = 0; k < kClients; ++k) {
    ASSERT_EQ(errors[k], "") << "client " << k;
    EXPECT_EQ(results[k], cpu_oracle(inputs[k], n)) << "client " << k;
  }
  EXPECT_EQ(s.stats().ops, int64_t{kClients} * n);
  EXPECT_EQ(s.stats().sessions_total, kClients);
  EXPECT_TRUE(s.drained()) << s.stats().sessions << " sessions, " << s.stats().live_tensors
                           << " tensors, " << s.stats().live_bytes << " bytes left";
  std::printf("[remote load] %d clients x %d ops in %.2f s: %.0f ops/s, %.1f us per op\n", kClients,
              n, seconds, kClients * n / seconds, seconds * 1e6 / (kClients * n));
}

}  // namespace
}  // namespace ember::remote::test
